/* What the model description files share (model.c, engine/arch/): keys read
 * with a default or a message naming them, tensors checked by shape and type
 * class (model_check.c), the rope keys (model_rope.c). Each failure leaves a
 * message naming the key or tensor. */
#ifndef SL_ENGINE_MODEL_INTERNAL_H
#define SL_ENGINE_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "../gguf/gguf.h"
#include "model.h"

enum { T_MATRIX, T_F32 };   /* tensor type class: a kernel weight type / F32 */

/* "<arch>.<suffix>"; absent: def when !required, else SL_ENOENT. */
int sl_model_key_u32(const sl_gguf *g, const char *arch, const char *suffix, uint32_t *out,
                     bool required, uint32_t def);
/* The same as a scalar (every layer) or an array of integers or bools
 * (exactly n elements; n = 0: any): out[i < n] (out may be NULL), *max the
 * largest. */
int sl_model_key_u32_layers(const sl_gguf *g, const char *arch, const char *suffix, uint32_t n, uint32_t *out,
                            uint32_t *max, bool required, uint32_t def);
int sl_model_key_f32(const sl_gguf *g, const char *arch, const char *suffix, float *out,
                     bool required, float def);
/* Presence, shape [ne0, ne1] (ne1 = 0: 1-D) and type class; *out = the tensor or NULL. */
int sl_model_check_tensor(const sl_gguf *g, const char *name, uint64_t ne0, uint64_t ne1, int cls,
                          bool optional, const sl_gguf_tensor **out);
/* The same for "blk.<l>.<suffix>", required. */
int sl_model_check_layer_tensor(const sl_gguf *g, uint32_t l, const char *suffix, uint64_t ne0, uint64_t ne1,
                                int cls);
/* "blk.<l>.<suffix>" as a 3-D expert tensor [ne0, ne1, ne2] of a weight type. */
int sl_model_check_experts(const sl_gguf *g, uint32_t l, const char *suffix, uint64_t ne0, uint64_t ne1,
                           uint64_t ne2);
/* True if the kernels can multiply with weights of this type. */
bool sl_model_matrix_type_ok(uint32_t type);

/* <arch>.rope.scaling.* into d (none, linear, llama3). */
int sl_model_rope_keys(sl_model_desc *d, const sl_gguf *g);

#endif
