/* A 64-bit non-cryptographic streaming hash (4 lanes of multiply-rotate over
 * 32-byte stripes, then an avalanche: the structure of XXH64, our own code;
 * not claimed wire-compatible with it). Checksums the prompt-cache files and
 * names a model file (engine/session_state.c). Several GB/s portably, so a
 * 100 MB KV image costs tens of ms, not a CRC's hundreds. */
#ifndef SL_ENGINE_HASH64_H
#define SL_ENGINE_HASH64_H

#include <stddef.h>
#include <stdint.h>

typedef struct sl_hash64 {
    uint64_t v[4];
    uint64_t total;         /* bytes seen */
    uint8_t buf[32];        /* partial stripe */
    size_t nbuf;
    uint64_t seed;
} sl_hash64;

void sl_hash64_init(sl_hash64 *h, uint64_t seed);
void sl_hash64_update(sl_hash64 *h, const void *p, size_t n);
/* Digest of everything so far (h is unchanged; more may follow). */
uint64_t sl_hash64_final(const sl_hash64 *h);
/* One-shot. */
uint64_t sl_hash64_of(const void *p, size_t n, uint64_t seed);

#endif
