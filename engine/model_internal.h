/* Helpers the model description files share (model.c, model_dense.c): keys
 * read with a default or a message naming them, tensors checked by shape and
 * type class. Each failure leaves a message naming the key or tensor. */
#ifndef SL_ENGINE_MODEL_INTERNAL_H
#define SL_ENGINE_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "../gguf/gguf.h"

enum { T_MATRIX, T_F32 };   /* tensor type class: a kernel weight type / F32 */

/* "<arch>.<suffix>"; absent: def when !required, else SL_ENOENT. */
int sl_model_key_u32(const sl_gguf *g, const char *arch, const char *suffix, uint32_t *out,
                     bool required, uint32_t def);
int sl_model_key_f32(const sl_gguf *g, const char *arch, const char *suffix, float *out,
                     bool required, float def);
/* Presence, shape [ne0, ne1] (ne1 = 0: 1-D) and type class; *out = the tensor or NULL. */
int sl_model_check_tensor(const sl_gguf *g, const char *name, uint64_t ne0, uint64_t ne1, int cls,
                          bool optional, const sl_gguf_tensor **out);

#endif
