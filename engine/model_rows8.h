/* Which of a model's matrices are packed in rows of eight where they stay in
 * memory (resident mode, stream mode's pinned units; sl_stream_config.rows8):
 * the ones the forward pass reads only through the kernels' matvec / matmul
 * (whole, or cut by rows at group bounds), of a type whose rows8 kernel beats
 * the plain rows on the level in use. */
#ifndef SL_ENGINE_MODEL_ROWS8_H
#define SL_ENGINE_MODEL_ROWS8_H

#include "../io/sluice_stream.h"
#include "../kernels/kernels.h"
#include "model_desc.h"

typedef struct sl_rows8_policy {
    const sl_model_desc *d;
    const sl_kern *k;
} sl_rows8_policy;

/* sl_stream_config.rows8 with ctx = an sl_rows8_policy. */
int sl_model_rows8_pick(void *ctx, const sl_stream_tensor *t);

#endif
