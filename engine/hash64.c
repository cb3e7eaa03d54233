/* Streaming 64-bit hash (see hash64.h). */
#include "hash64.h"

#include <string.h>

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull
#define P4 0x85EBCA77C2B2AE63ull
#define P5 0x27D4EB2F165667C5ull

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t round64(uint64_t acc, uint64_t lane) { return rotl(acc + lane * P2, 31) * P1; }
static inline uint64_t merge(uint64_t acc, uint64_t v) { return (acc ^ round64(0, v)) * P1 + P4; }

void sl_hash64_init(sl_hash64 *h, uint64_t seed)
{
    memset(h, 0, sizeof *h);
    h->seed = seed;
    h->v[0] = seed + P1 + P2;
    h->v[1] = seed + P2;
    h->v[2] = seed;
    h->v[3] = seed - P1;
}

static void stripes(uint64_t v[4], const uint8_t *p, size_t n)
{
    uint64_t a = v[0], b = v[1], c = v[2], d = v[3];
    for (size_t i = 0; i + 32 <= n; i += 32) {
        a = round64(a, rd64(p + i));
        b = round64(b, rd64(p + i + 8));
        c = round64(c, rd64(p + i + 16));
        d = round64(d, rd64(p + i + 24));
    }
    v[0] = a; v[1] = b; v[2] = c; v[3] = d;
}

void sl_hash64_update(sl_hash64 *h, const void *data, size_t n)
{
    const uint8_t *p = data;
    h->total += n;
    if (h->nbuf) {
        size_t take = 32 - h->nbuf < n ? 32 - h->nbuf : n;
        memcpy(h->buf + h->nbuf, p, take);
        h->nbuf += take; p += take; n -= take;
        if (h->nbuf < 32) return;
        stripes(h->v, h->buf, 32);
        h->nbuf = 0;
    }
    size_t whole = n & ~(size_t)31;
    stripes(h->v, p, whole);
    memcpy(h->buf, p + whole, n - whole);
    h->nbuf = n - whole;
}

uint64_t sl_hash64_final(const sl_hash64 *h)
{
    uint64_t acc;
    if (h->total >= 32) {
        acc = rotl(h->v[0], 1) + rotl(h->v[1], 7) + rotl(h->v[2], 12) + rotl(h->v[3], 18);
        for (int i = 0; i < 4; i++) acc = merge(acc, h->v[i]);
    } else {
        acc = h->seed + P5;
    }
    acc += h->total;
    const uint8_t *p = h->buf;
    size_t n = h->nbuf;
    for (; n >= 8; p += 8, n -= 8) acc = rotl(acc ^ round64(0, rd64(p)), 27) * P1 + P4;
    if (n >= 4) { acc = rotl(acc ^ (uint64_t)rd32(p) * P1, 23) * P2 + P3; p += 4; n -= 4; }
    for (; n; p++, n--) acc = rotl(acc ^ (uint64_t)*p * P5, 11) * P1;
    acc ^= acc >> 33; acc *= P2;
    acc ^= acc >> 29; acc *= P3;
    acc ^= acc >> 32;
    return acc;
}

uint64_t sl_hash64_of(const void *p, size_t n, uint64_t seed)
{
    sl_hash64 h;
    sl_hash64_init(&h, seed);
    sl_hash64_update(&h, p, n);
    return sl_hash64_final(&h);
}
