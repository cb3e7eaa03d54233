/* Private to gguf/: the reader's handle layout, shared by the parser
 * (gguf_read.c) and the accessors (gguf_access.c). */
#ifndef SL_GGUF_INTERNAL_H
#define SL_GGUF_INTERNAL_H

#include "gguf.h"
#include "base/sl_internal.h"

/* Bump allocator: the value tree of a 150k-token vocab is one allocation
 * per chunk, not per string, and is freed at once. */
typedef struct sl_arena_chunk {
    struct sl_arena_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char mem[];
} sl_arena_chunk;

typedef struct { sl_arena_chunk *head; } sl_arena;

/* align: a power of two <= 16 */
void *sl_arena_alloc(sl_arena *a, size_t n, size_t align);
void sl_arena_free(sl_arena *a);

typedef struct sl_gguf_kv {
    const char *key;
    uint64_t key_len;
    uint64_t offset;        /* file offset of the key, for messages */
    sl_gguf_value val;
} sl_gguf_kv;

/* Open-addressing table of indices into kvs or tensors (idx1 = index + 1, 0 empty);
 * the hash is kept so growing needs no names. */
typedef struct { uint64_t hash, idx1; } sl_gguf_slot;
typedef struct { sl_gguf_slot *slot; uint64_t cap, n; } sl_gguf_index;

uint64_t sl_gguf_hash(const char *s, size_t len);
int sl_gguf_index_add(sl_gguf_index *ix, uint64_t hash, uint64_t idx);
/* Index of the kv / tensor with this name, or -1. */
int64_t sl_gguf_kv_lookup(const sl_gguf *g, const char *key, size_t len);
int64_t sl_gguf_tensor_lookup(const sl_gguf *g, const char *name, size_t len);

struct sl_gguf {
    sl_gguf_read_fn fn;
    void *ctx;
    int fd, own_fd;
    uint64_t file_size;
    char *name;
    uint32_t version;
    uint64_t alignment, data_offset;

    sl_gguf_kv *kvs;
    int64_t n_kv;
    sl_gguf_index kv_index;

    sl_gguf_tensor *tensors;
    int64_t n_tensors;
    sl_gguf_index t_index;

    int32_t n_layers;
    sl_gguf_extent *layers;
    sl_gguf_extent nonlayer;
    uint64_t total_bytes;

    sl_arena arena;

    uint32_t n_shards;          /* 1: a plain file (shards = &one) */
    sl_gguf_shard *shards, one;
    sl_gguf **parts;            /* split: [n_shards], each shard's own reader; parts[0] NULL (this one) */
};

/* Layer and non-layer extents and the total from g->tensors (g->layers unset). */
int sl_gguf_build_extents(sl_gguf *g);
/* One file as it is (no split join). */
int sl_gguf_open_file(sl_gguf **out, const char *path);

#endif
