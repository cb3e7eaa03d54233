/* Multi-head latent attention (DeepSeek's MLA) in the absorbed form: the
 * cache holds one [c, k_rope] row per position (forward_mla.c). */
#ifndef SL_ENGINE_FORWARD_MLA_H
#define SL_ENGINE_FORWARD_MLA_H

#include <stdint.h>

#include "forward_pass.h"

/* Layer l's MLA block over the rows of sq[0..ns) (n in all): from the
 * attn_norm'ed rows in f->xn, each position's cache row stored in its
 * sequence's cache, the block's output rows (before the residual) in f->xn.
 * f->up holds q_lora_rank and f->gate n_head * value_length_mla floats a row
 * (sl_forward_arena_bytes). */
int sl_forward_mla(sl_forward *f, const sl_forward_seq *sq, int32_t ns, int32_t l, const sl_stream_view *v,
                   int32_t n);

#endif
