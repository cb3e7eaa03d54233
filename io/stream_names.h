/* Enum values by name (stream_names.c): a table indexed by the enum, each row a
 * name and what the value stands for (a mode's operations, a backend), as the
 * modes' (stream_modes.c), backends' (stream_io.c) and eviction policies'
 * tables are. */
#ifndef SL_STREAM_NAMES_H
#define SL_STREAM_NAMES_H

typedef struct sl_named { const char *name; const void *row; } sl_named;

/* The name of value v of a table of n rows; "?" outside 0..n-1. */
const char *sl_named_name(const sl_named *t, int n, int v);
/* 0 and *v set, or SL_EINVAL (*v untouched) for a name not in the table. */
int sl_named_parse(const sl_named *t, int n, const char *s, int *v);

#endif
