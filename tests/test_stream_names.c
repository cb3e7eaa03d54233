/* The one spelling of modes, backends and eviction policies (the tables of
 * io/stream_modes.c, io/stream_io.c, io/stream_names.c): every name parses
 * back to its value, anything else is SL_EINVAL and leaves the output alone;
 * every mode has its operations. Portable. */
#include "sl_test.h"
#include "../gguf/base/sl_status.h"
#include "../io/sluice_stream.h"
#include "../io/stream_modes.h"

/* Each of the n names is the name of its value and parses back to it; value n has none. */
static void round_trip(const char *const *names, int n, const char *(*name_of)(int),
                       int (*parse)(const char *, int *))
{
    for (int v = 0; v < n; v++) {
        cr_assert_str_eq(name_of(v), names[v]);
        int got = -1;
        cr_assert_eq(parse(names[v], &got), 0);
        cr_assert_eq(got, v);
    }
    cr_assert_str_eq(name_of(n), "?");
    cr_assert_str_eq(name_of(-1), "?");
}

Test(stream_names, round_trip_and_rejects)
{
    const char *const modes[] = { "auto", "resident", "stream", "mmap" };
    round_trip(modes, SL_MODE_MMAP + 1, sl_stream_mode_name, sl_stream_mode_parse);
    const char *const ios[] = { "auto", "uring", "pread" };
    round_trip(ios, SL_IO_PREAD + 1, sl_stream_io_name, sl_stream_io_parse);
    const char *const policies[] = { "auto", "lru", "lfu", "decay" };
    round_trip(policies, SL_EVICT_DECAY + 1, sl_stream_policy_name, sl_stream_policy_parse);
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
