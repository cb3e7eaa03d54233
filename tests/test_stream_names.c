/* The one spelling of modes, backends and eviction policies (the tables of
 * io/stream_modes.c, io/stream_io.c, io/stream_names.c): every name parses
 * back to its value, anything else is SL_EINVAL and leaves the output alone;
 * every mode has its operations. Portable. */
#include "sl_test.h"
#include "../gguf/base/sl_status.h"
#include "../io/sluice_stream.h"
#include "../io/stream_modes.h"

Test(stream_names, round_trip_and_rejects)
{
    const char *modes[] = { "auto", "resident", "stream", "mmap" };
    for (int m = SL_MODE_AUTO; m <= SL_MODE_MMAP; m++) {
        cr_assert_str_eq(sl_stream_mode_name(m), modes[m]);
        int got = -1;
        cr_assert_eq(sl_stream_mode_parse(modes[m], &got), 0);
        cr_assert_eq(got, m);
    }
    const char *ios[] = { "auto", "uring", "pread" };
    for (int io = SL_IO_AUTO; io <= SL_IO_PREAD; io++) {
        cr_assert_str_eq(sl_stream_io_name(io), ios[io]);
        int got = -1;
        cr_assert_eq(sl_stream_io_parse(ios[io], &got), 0);
        cr_assert_eq(got, io);
    }
    cr_assert_str_eq(sl_stream_mode_name(-1), "?");
    cr_assert_str_eq(sl_stream_mode_name(SL_MODE_MMAP + 1), "?");
    cr_assert_str_eq(sl_stream_io_name(SL_IO_PREAD + 1), "?");
    const char *policies[] = { "auto", "lru", "lfu", "decay" };
    for (int pol = SL_EVICT_AUTO; pol <= SL_EVICT_DECAY; pol++) {
        cr_assert_str_eq(sl_stream_policy_name(pol), policies[pol]);
        int got = -1;
        cr_assert_eq(sl_stream_policy_parse(policies[pol], &got), 0);
        cr_assert_eq(got, pol);
    }
    cr_assert_str_eq(sl_stream_policy_name(SL_EVICT_DECAY + 1), "?");
    cr_assert_eq(SL_MODE_COUNT, SL_MODE_MMAP + 1);
    cr_assert_eq(SL_IO_COUNT, SL_IO_PREAD + 1);
    const char *bad[] = { "", "Stream", "streams", "io_uring", "uring ", "pread pool", NULL };
    for (int i = 0; i < 7; i++) {
        int v = 77;
        cr_assert_eq(sl_stream_mode_parse(bad[i], &v), SL_EINVAL);
        cr_assert_eq(sl_stream_io_parse(bad[i], &v), SL_EINVAL);
        cr_assert_eq(sl_stream_policy_parse(bad[i], &v), SL_EINVAL);
        cr_assert_eq(v, 77);
    }
}

/* A mode is its row: a name and the operations every mode must have. */
Test(stream_names, every_mode_has_its_row)
{
    for (int m = SL_MODE_AUTO + 1; m < SL_MODE_COUNT; m++) {
        const sl_stream_mode_ops *ops = sl_stream_mode_ops_of(m);
        cr_assert_not_null(ops, "mode %d", m);
        cr_assert(ops->open && ops->close && ops->acquire, "mode %s", sl_stream_mode_name(m));
        cr_assert_str_neq(sl_stream_mode_name(m), "?");
    }
}
