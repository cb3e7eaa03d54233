/* Packing by rows of eight at load (stream_rows8.c). */
#ifndef SL_STREAM_ROWS8_H
#define SL_STREAM_ROWS8_H

#include "stream_units.h"

#include <stdbool.h>

/* t packs: its type has the layout, its rows (of each expert) fill whole
 * groups and the config's rows8 pick (open only) takes it. */
bool sl_stream_rows8_wanted(const sl_stream *s, const sl_stream_tensor *t);
/* Packs t's data in place and flags t's type; `where` begins a failure's message. */
int sl_stream_rows8_pack(sl_stream_tensor *t, uint8_t *data, const char *where);
/* A unit just loaded into memory at base (as acquire returns it): its picked
 * matrices packed (during open: the pick decides and is remembered; later:
 * what it picked then); `where` begins a failure's message. */
int sl_stream_rows8_unit(sl_stream *s, sl_unit *un, const uint8_t *base, const char *where);
/* A unit unpinned: its views read the plain layout again. */
void sl_stream_rows8_unpin(sl_unit *un);

#endif
