/* The modes as one table (stream_modes.c), one row per enum sl_stream_mode:
 * its name and its operations. A new mode is its own file defining a const
 * sl_stream_mode_ops (stream_core.h), its extern below, an enum value before
 * SL_MODE_COUNT and its row; the planner (stream_plan.c) says when auto picks it. */
#ifndef SL_STREAM_MODES_H
#define SL_STREAM_MODES_H

#include "stream_core.h"

/* The modes' rows, each defined in its file. */
extern const sl_stream_mode_ops sl_stream_resident_ops;   /* stream_resident.c */
extern const sl_stream_mode_ops sl_stream_ring_ops;       /* stream_ring.c: SL_MODE_STREAM */
extern const sl_stream_mode_ops sl_stream_mmap_ops;       /* stream_mmap.c */

/* The operations of mode (never SL_MODE_AUTO: the plan has decided). */
const sl_stream_mode_ops *sl_stream_mode_ops_of(int mode);

#endif
