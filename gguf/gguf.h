/* GGUF v2/v3 reader and streaming writer. Knows nothing of models.
 *
 * The reader pulls bytes through a pread-style callback (or an fd); it never
 * needs the whole file in memory and never mmaps. It trusts no number in the
 * file: every count, length, dimension and offset is checked (overflow-safe)
 * before use, and a failure returns SL_E* with a message naming the field and
 * its file offset (see sl_status.h, sl_gguf_errmsg()). Tensor data is NOT
 * read: only its location is validated; io/ reads it. */
#ifndef SL_GGUF_H
#define SL_GGUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "sl_api.h"
#include "sl_status.h"
#include "gguf_type.h"   /* enum sl_ggml_type and its table */

#ifdef __cplusplus
extern "C" {
#endif

/* Metadata value types (the on-disk numbers). */
enum sl_gguf_vtype {
    SL_GGUF_U8 = 0, SL_GGUF_I8 = 1, SL_GGUF_U16 = 2, SL_GGUF_I16 = 3,
    SL_GGUF_U32 = 4, SL_GGUF_I32 = 5, SL_GGUF_F32 = 6, SL_GGUF_BOOL = 7,
    SL_GGUF_STRING = 8, SL_GGUF_ARRAY = 9, SL_GGUF_U64 = 10, SL_GGUF_I64 = 11,
    SL_GGUF_F64 = 12,
};

#define SL_GGUF_MAX_DIMS 4
#define SL_GGUF_DEFAULT_ALIGNMENT 32
/* Kernels load tensor data in place as f32/f16/i64/f64 and block structs: a
 * smaller general.alignment would make those loads misaligned (undefined). */
#define SL_GGUF_MIN_ALIGNMENT 8

/* Caps on hostile sizes (a real file is far below all of them). */
#define SL_GGUF_MAX_STRING   (1u << 24)   /* 16 MiB per string */
#define SL_GGUF_MAX_NAME     256          /* tensor name bytes (ggml: 64) */
#define SL_GGUF_MAX_ARRAY_DEPTH 4
#define SL_GGUF_MAX_KEY      65535        /* metadata key bytes (GGUF spec) */
#define SL_GGUF_MAX_ARRAY_LEN (1ull << 26) /* elements in one array (real vocabs: < 1M) */
#define SL_GGUF_MAX_LAYERS   65536        /* N in "blk.N." must be below this */

/* Returns bytes read (may be short only at end of file) or a negative errno. */
typedef int64_t (*sl_gguf_read_fn)(void *ctx, void *buf, size_t len, uint64_t offset);

typedef struct sl_gguf sl_gguf;

typedef struct sl_gguf_tensor {
    const char *name;             /* NUL-terminated, owned by the reader */
    uint32_t n_dims;              /* 1..SL_GGUF_MAX_DIMS */
    uint64_t ne[SL_GGUF_MAX_DIMS];/* ne[0] = row length (innermost); unused dims = 1 */
    uint32_t type;                /* enum sl_ggml_type */
    uint64_t offset;              /* relative to the data section, as stored */
    uint64_t file_offset;         /* absolute: data_offset + offset */
    uint64_t nbytes;              /* exact byte size from type and dims */
    int32_t  layer;               /* N for "blk.N.*", else -1 */
    uint32_t shard;               /* file of a split model holding the data (0: the first / only) */
} sl_gguf_tensor;

/* Byte range covering a set of tensors: [begin, end) in the file. */
typedef struct sl_gguf_extent {
    uint64_t begin, end;          /* end - begin includes alignment padding */
    uint64_t bytes;               /* sum of the tensors' nbytes */
    uint32_t n_tensors;
} sl_gguf_extent;
#define SL_GGUF_EXTENT_MIN_SIZE SL_STRUCT_END(sl_gguf_extent, n_tensors)   /* layout of 0.2.0 */

/* A split model (llama.cpp's gguf-split: <prefix>-00001-of-0000N.gguf, keys
 * split.no / split.count / split.tensors.count) is read as one model: the
 * files are laid end to end in one offset space, each starting at a multiple
 * of SL_GGUF_SHARD_ALIGN (above every O_DIRECT alignment and page size), so
 * tensor file_offset = the shard's base + the offset in its own file. A plain
 * file is one shard at base 0. */
#define SL_GGUF_MAX_SHARDS   256          /* files of one split model (fds: 2 per shard) */
#define SL_GGUF_SHARD_ALIGN  (1u << 20)
typedef struct sl_gguf_shard {
    const char *path;             /* as opened (the reader's name for it) */
    int fd;                       /* the reader's descriptor; -1 when read through a callback */
    uint64_t base;                /* model offset of the file's byte 0 */
    uint64_t file_size;           /* of this file */
    uint64_t data_offset;         /* its data section, in its own file */
    int64_t n_tensors;
    uint64_t tensor_bytes;
} sl_gguf_shard;

/* ---- metadata value types ------------------------------------------- */
/* Name ("u32") or NULL for an unknown vtype. */
SL_API const char *sl_gguf_vtype_name(uint32_t vtype);
/* Size of one scalar of vtype on disk (1,2,4,8), 0 for STRING/ARRAY/unknown. */
SL_API size_t sl_gguf_vtype_size(uint32_t vtype);

/* ---- reader ----------------------------------------------------------- */
/* name: used in messages (usually the path). The fd/callback must outlive the reader. */
SL_API int sl_gguf_open_cb(sl_gguf **out, sl_gguf_read_fn fn, void *ctx, uint64_t file_size,
                           const char *name);
SL_API int sl_gguf_open_fd(sl_gguf **out, int fd, const char *name);
/* Opens the file itself (O_RDONLY|O_CLOEXEC) and closes it in sl_gguf_close.
 * A shard of a split model (any of them) opens every shard of it as one model:
 * all present, of the same split, tensors counted and named once. (_cb and
 * _fd read the one file they are given, a shard alone.) */
SL_API int sl_gguf_open_path(sl_gguf **out, const char *path);
SL_API void sl_gguf_close(sl_gguf *g);

/* Message of the last failure on this handle, or of a failed open. Getters
 * are safe to call from several threads at once, so their messages are kept
 * per thread: this returns the calling thread's last message. */
SL_API const char *sl_gguf_errmsg(const sl_gguf *g);

SL_API uint32_t sl_gguf_version(const sl_gguf *g);
/* Split model: the end of the last shard in model offsets. */
SL_API uint64_t sl_gguf_file_size(const sl_gguf *g);
SL_API uint64_t sl_gguf_alignment(const sl_gguf *g);
SL_API uint64_t sl_gguf_data_offset(const sl_gguf *g);   /* start of the (first file's) data section */
SL_API const char *sl_gguf_name(const sl_gguf *g);

/* Shards: 1 for a plain file. shard_of: the one whose file holds model
 * offset off, NULL in the gaps between files and past the end. */
SL_API uint32_t sl_gguf_n_shards(const sl_gguf *g);
SL_API const sl_gguf_shard *sl_gguf_shard_at(const sl_gguf *g, uint32_t i);
SL_API const sl_gguf_shard *sl_gguf_shard_of(const sl_gguf *g, uint64_t off);

/* Metadata, by index 0..n_kv-1 in file order (a split model: its first file's). */
SL_API int64_t sl_gguf_n_kv(const sl_gguf *g);
SL_API const char *sl_gguf_kv_key(const sl_gguf *g, int64_t i);
SL_API uint32_t sl_gguf_kv_type(const sl_gguf *g, int64_t i);     /* enum sl_gguf_vtype */
SL_API int64_t sl_gguf_find_key(const sl_gguf *g, const char *key);   /* -1 if absent */

/* Typed getters by key. SL_ENOENT if absent, SL_ETYPE if of another type
 * (integers: any integer type whose value fits; floats: F32 or F64). */
SL_API int sl_gguf_get_u32(const sl_gguf *g, const char *key, uint32_t *out);
SL_API int sl_gguf_get_i64(const sl_gguf *g, const char *key, int64_t *out);
SL_API int sl_gguf_get_u64(const sl_gguf *g, const char *key, uint64_t *out);
SL_API int sl_gguf_get_f32(const sl_gguf *g, const char *key, float *out);
SL_API int sl_gguf_get_f64(const sl_gguf *g, const char *key, double *out);
SL_API int sl_gguf_get_bool(const sl_gguf *g, const char *key, bool *out);
/* String: pointer owned by the reader, NUL-terminated (len excludes NUL; the
 * string may itself contain NULs). */
SL_API int sl_gguf_get_str(const sl_gguf *g, const char *key, const char **s, uint64_t *len);

/* Arrays. elem_type is the element vtype; for numeric/bool elements *data
 * points at n packed little-endian host values of that type. For strings and
 * nested arrays *data is NULL: use sl_gguf_arr_str / sl_gguf_arr_sub. */
SL_API int sl_gguf_get_arr(const sl_gguf *g, const char *key, uint32_t *elem_type, uint64_t *n,
                           const void **data);
SL_API int sl_gguf_kv_arr(const sl_gguf *g, int64_t kv, uint32_t *elem_type, uint64_t *n,
                          const void **data);
/* i-th string of a string array at kv index. */
SL_API int sl_gguf_arr_str(const sl_gguf *g, int64_t kv, uint64_t i, const char **s, uint64_t *len);

/* Generic value access by kv index for printing (sluice info) and copying.
 * A node of the value tree. Declared (not opaque) so callers can provide the
 * tmp node of sl_gguf_value_arr_at and build trees for
 * sl_gguf_writer_set_value; read it through the accessors below. */
typedef struct sl_gguf_value {
    uint32_t type;               /* enum sl_gguf_vtype */
    uint32_t arr_type;           /* ARRAY: element vtype */
    uint64_t n;                  /* STRING: byte length; ARRAY: element count */
    union {
        uint64_t u;              /* U8..U64, BOOL (0/1) */
        int64_t i;               /* I8..I64 */
        double f;                /* F32 (exactly widened), F64 */
        const char *s;           /* STRING: n bytes + NUL */
        const void *data;        /* ARRAY of numeric/BOOL: n packed host values */
        const struct sl_gguf_value *elems;  /* ARRAY of STRING or ARRAY: n nodes */
    } v;
} sl_gguf_value;
SL_API const sl_gguf_value *sl_gguf_kv_value(const sl_gguf *g, int64_t i);
SL_API uint32_t sl_gguf_value_type(const sl_gguf_value *v);
/* scalar getters: valid only for the matching type */
SL_API uint64_t sl_gguf_value_u64(const sl_gguf_value *v);    /* U8..U64, BOOL */
SL_API int64_t  sl_gguf_value_i64(const sl_gguf_value *v);    /* I8..I64 */
SL_API double   sl_gguf_value_f64(const sl_gguf_value *v);    /* F32, F64 */
SL_API const char *sl_gguf_value_str(const sl_gguf_value *v, uint64_t *len);
/* arrays: element type, length, i-th element as a value node */
SL_API uint32_t sl_gguf_value_arr_type(const sl_gguf_value *v);
SL_API uint64_t sl_gguf_value_arr_len(const sl_gguf_value *v);
/* String/array elements: *elem points into the tree (tmp unused, may be NULL).
 * Numeric/BOOL elements: decoded into *tmp and *elem = tmp. */
SL_API int sl_gguf_value_arr_at(const sl_gguf_value *v, uint64_t i, sl_gguf_value *tmp,
                                const sl_gguf_value **elem);

/* Tensors, in file order. */
SL_API int64_t sl_gguf_n_tensors(const sl_gguf *g);
SL_API const sl_gguf_tensor *sl_gguf_tensor_at(const sl_gguf *g, int64_t i);
SL_API const sl_gguf_tensor *sl_gguf_find_tensor(const sl_gguf *g, const char *name); /* NULL if absent */

/* Layers: n_layers = 1 + highest N of "blk.N.*" (0 if none). An extent of a
 * layer with no tensors has n_tensors == 0. [begin, end) runs from the first
 * byte of the layer's lowest tensor to the last byte of its highest one (no
 * trailing padding); if the file interleaves layers it also covers others'. */
SL_API int32_t sl_gguf_n_layers(const sl_gguf *g);
/* (The _sized forms take the caller's sizeof; the inlines pass it.) */
SL_API int sl_gguf_layer_extent_sized(const sl_gguf *g, int32_t layer, sl_gguf_extent *out,
                                      size_t size);
static inline int sl_gguf_layer_extent(const sl_gguf *g, int32_t layer, sl_gguf_extent *out)
{ return sl_gguf_layer_extent_sized(g, layer, out, sizeof *out); }
/* All tensors that are not in a layer (token_embd, output_norm, output, ...). */
SL_API int sl_gguf_nonlayer_extent_sized(const sl_gguf *g, sl_gguf_extent *out, size_t size);
static inline int sl_gguf_nonlayer_extent(const sl_gguf *g, sl_gguf_extent *out)
{ return sl_gguf_nonlayer_extent_sized(g, out, sizeof *out); }
SL_API uint64_t sl_gguf_total_tensor_bytes(const sl_gguf *g);

/* Read raw bytes through the reader's callback (checked against file size;
 * a split model: model offsets, the range inside one shard). */
SL_API int sl_gguf_read(const sl_gguf *g, void *buf, size_t len, uint64_t offset);

/* ---- writer ----------------------------------------------------------- */
/* Build metadata and tensor infos in memory, then write header + tensor data
 * streaming, in tensor order, in as many chunks as the caller likes. */
typedef struct sl_gguf_writer sl_gguf_writer;

SL_API int sl_gguf_writer_open(sl_gguf_writer **out, const char *path, uint32_t version /*2|3*/);
SL_API const char *sl_gguf_writer_errmsg(const sl_gguf_writer *w);
SL_API int sl_gguf_writer_set_alignment(sl_gguf_writer *w, uint32_t alignment);  /* power of 2 */
SL_API int sl_gguf_writer_set_u32(sl_gguf_writer *w, const char *key, uint32_t v);
SL_API int sl_gguf_writer_set_i32(sl_gguf_writer *w, const char *key, int32_t v);
SL_API int sl_gguf_writer_set_u64(sl_gguf_writer *w, const char *key, uint64_t v);
SL_API int sl_gguf_writer_set_f32(sl_gguf_writer *w, const char *key, float v);
SL_API int sl_gguf_writer_set_bool(sl_gguf_writer *w, const char *key, bool v);
SL_API int sl_gguf_writer_set_str(sl_gguf_writer *w, const char *key, const char *s);
/* Any scalar type: *val is a host value of vtype (BOOL: a bool). */
SL_API int sl_gguf_writer_set_scalar(sl_gguf_writer *w, const char *key, uint32_t vtype,
                                     const void *val);
/* Any value tree (nested arrays included), e.g. built by hand or from a reader. */
SL_API int sl_gguf_writer_set_value(sl_gguf_writer *w, const char *key, const sl_gguf_value *v);
/* Numeric array: n elements of elem_type, packed. */
SL_API int sl_gguf_writer_set_arr(sl_gguf_writer *w, const char *key, uint32_t elem_type,
                                  const void *data, uint64_t n);
SL_API int sl_gguf_writer_set_arr_str(sl_gguf_writer *w, const char *key, const char *const *s,
                                      uint64_t n);
/* Copy one key (any type, nested arrays included) from a reader. */
SL_API int sl_gguf_writer_copy_kv(sl_gguf_writer *w, const sl_gguf *g, int64_t kv);
/* Declare a tensor; offsets are assigned in declaration order with alignment. */
SL_API int sl_gguf_writer_add_tensor(sl_gguf_writer *w, const char *name, uint32_t type,
                                     uint32_t n_dims, const uint64_t *ne);
/* Writes header, metadata, tensor infos and padding; no more set_/add_ after. */
SL_API int sl_gguf_writer_begin_data(sl_gguf_writer *w);
/* Appends data of the current tensor; moves to the next once it is complete. */
SL_API int sl_gguf_writer_write(sl_gguf_writer *w, const void *data, uint64_t len);
/* The same without data: the file keeps a hole there (a sparse file, the
 * bytes read as zeros, no disk used), e.g. a shape for `info` / `plan`. */
SL_API int sl_gguf_writer_skip(sl_gguf_writer *w, uint64_t len);
/* The file is written to a temporary beside path (never through a link)
 * and appears at path only complete: close checks every tensor was written,
 * flushes, fsyncs and renames it over path; frees w. On any failure path
 * keeps its previous contents. */
SL_API int sl_gguf_writer_close(sl_gguf_writer *w);
/* Frees without finishing (on error paths): the temporary is removed, path untouched. */
SL_API void sl_gguf_writer_abort(sl_gguf_writer *w);

/* ---- split writer ------------------------------------------------------ */
/* Writes g's model as prefix-00001-of-0000N.gguf ... the way llama.cpp's
 * gguf-split --split-max-size does (gguf_split_write.c): tensors in order, a
 * new file when the next one would take a file's tensor bytes above
 * max_bytes; the first file has all metadata; split keys in every file.
 * *n_out: N. On failure no file of the split is left. */
SL_API int sl_gguf_write_split(const sl_gguf *g, const char *prefix, uint64_t max_bytes, uint32_t *n_out);
/* Its parts, for a writer that makes the files itself: the file of each of n
 * tensors of nbytes[i] (names and what for messages), returning the count
 * (0 and a message when a tensor alone exceeds max_bytes or too many files);
 * the split keys of file no (of count, n_tensors in all), set after the
 * others; the name of file i. */
SL_API uint32_t sl_gguf_split_assign(const char *what, int64_t n, const uint64_t *nbytes, const char *const *names,
                                     uint64_t max_bytes, uint32_t *of);
SL_API int sl_gguf_writer_set_split_keys(sl_gguf_writer *w, uint32_t no, uint32_t count, int32_t n_tensors);
SL_API void sl_gguf_split_path(char *buf, size_t n, const char *prefix, uint32_t i, uint32_t count);

#ifdef __cplusplus
}
#endif
#endif
