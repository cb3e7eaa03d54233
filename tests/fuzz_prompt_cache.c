/* libFuzzer target for the prompt-cache loader (engine/session_state.c): a
 * valid cache of stories260K is written once; each input edits it (a length
 * change, then byte writes at chosen offsets) and the edited file is loaded
 * whole and as a prefix. The edits may restore the header and payload hashes
 * (flag bits), so the checks behind them are reached too. Every load either
 * succeeds or fails with a message and an empty session. The edited file
 * lives in memory (a memfd, loaded through /proc/self/fd): no disk I/O per
 * input. */
#include "../engine/hash64.h"
#include "../engine/sluice.h"
#include "../gguf/base/sl_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* the file's layout (session_state.c): 112-byte header, its hash last; the payload's hash trails */
#define HDR_BYTES 112u
#define HDR_HASH_OFF 104u
#define SEED_HDR 0x5c1a1ce0u
#define SEED_PAY 0x5c1a1ce1u

static sl_session *sess;
static uint8_t *seed;
static size_t seed_len;
static char path[64];
static int mfd;
static int32_t prompt[64];
static int n_prompt;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    sl_model_params mp;
    sl_model_params_init(&mp);
    mp.n_ctx = 64;
    mp.n_threads = 1;
    sl_model *m;
    if (sl_model_open(&m, SL_SHARED_DIR "/models/stories260K.gguf", &mp) || sl_session_create(&sess, m) ||
        sl_session_feed_text(sess, "Once upon a time", false)) {
        fprintf(stderr, "fuzz_prompt_cache: %s\n", sl_last_error());
        abort();
    }
    char saved[64];
    snprintf(saved, sizeof saved, "/tmp/sluice-fuzz-pc.%d", (int)getpid());
    n_prompt = sl_model_tokenize(m, "Once upon a time there", 22, true, false, prompt, 64);
    FILE *f;
    if (sl_session_save(sess, saved) || !(f = fopen(saved, "rb"))) abort();
    fseek(f, 0, SEEK_END);
    seed_len = (size_t)ftell(f);
    rewind(f);
    seed = malloc(seed_len + 65536);
    if (fread(seed, 1, seed_len, f) != seed_len) abort();
    fclose(f);
    unlink(saved);
    if ((mfd = memfd_create("sluice-fuzz-pc", MFD_CLOEXEC)) < 0) abort();
    snprintf(path, sizeof path, "/proc/self/fd/%d", mfd);
    return 0;
}

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    int delta = (int16_t)(data[1] | data[2] << 8);
    size_t len = delta < 0 && (size_t)-delta > seed_len ? 0 : seed_len + (size_t)(ptrdiff_t)delta;
    if (len > seed_len + 65535) len = seed_len + 65535;
    uint8_t *img = malloc(len + 1);
    memset(img, 0, len + 1);
    memcpy(img, seed, len < seed_len ? len : seed_len);
    for (size_t i = 3; i + 3 <= size && len; i += 3)
        img[(size_t)(data[i] | data[i + 1] << 8) % len] = data[i + 2];
    if ((data[0] & 1) && len >= HDR_BYTES) put64(img + HDR_HASH_OFF, sl_hash64_of(img, HDR_HASH_OFF, SEED_HDR));
    if ((data[0] & 2) && len >= HDR_BYTES + 8)
        put64(img + len - 8, sl_hash64_of(img + HDR_BYTES, len - 8 - HDR_BYTES, SEED_PAY));
    if (ftruncate(mfd, 0) || (len && pwrite(mfd, img, len, 0) != (ssize_t)len)) abort();
    free(img);
    int rc = sl_session_load(sess, path);
    if (rc && (!sl_last_error()[0] || sl_session_n_past(sess) != 0)) __builtin_trap();
    int32_t reused = -1;
    rc = sl_session_load_prefix(sess, path, prompt, n_prompt, &reused);
    if (rc && (!sl_last_error()[0] || sl_session_n_past(sess) != 0)) __builtin_trap();
    if (!rc && (reused < 0 || reused > n_prompt || sl_session_n_past(sess) != reused)) __builtin_trap();
    return 0;
}
