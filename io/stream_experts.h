/* The expert cache (stream_experts.c) as the stream's other parts see it: made
 * by the ring mode of a split MoE file, counted in the stream's stats. Its
 * public calls (sl_stream_expert_*) are in sluice_stream.h. */
#ifndef SL_STREAM_EXPERTS_H
#define SL_STREAM_EXPERTS_H

#include "sluice_stream.h"

/* create: allocates the slot pool (plain reads, not fixed buffers).
 * destroy: waits for its reads (before the loader goes). */
int sl_experts_create(sl_stream *s);
void sl_experts_destroy(sl_stream *s);
void sl_experts_get_stats(const sl_stream *s, sl_stream_stats *out);
void sl_experts_reset_stats(sl_stream *s);

#endif
