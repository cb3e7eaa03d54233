/* One layer of the forward pass, its blocks dispatched by kind
 * (forward_layer.c). */
#ifndef SL_ENGINE_FORWARD_LAYER_H
#define SL_ENGINE_FORWARD_LAYER_H

#include <stdint.h>

#include "forward_pass.h"

/* Layer l over the rows of a pass (sequence s owns sq[s].n consecutive
 * rows of f->x, its cache, its positions from sq[s].kv->n_past; n = the
 * sum), v its unit's view. */
int sl_forward_layer(sl_forward *f, const sl_forward_seq *sq, int32_t ns, int32_t l, const sl_stream_view *v,
                     int32_t n);

#endif
