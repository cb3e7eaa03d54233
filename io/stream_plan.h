/* The planner (stream_plan.c): from the unit map, the config and the memory
 * budget, the mode and what is pinned, streamed and how many slots. */
#ifndef SL_STREAM_PLAN_H
#define SL_STREAM_PLAN_H

#include "stream_units.h"

#include <stddef.h>

/* Fills plan, sets units' pinned flags. */
int sl_plan_compute(sl_unit_map *um, const sl_gguf *g, const sl_stream_config *c,
                    uint32_t align, sl_stream_plan *p, char *err, size_t err_len);

#endif
