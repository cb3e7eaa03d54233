/* Memory-pressure ladder of a session (sluice.h "memory pressure"); the
 * session calls tick before each forward pass and free at destroy. */
#ifndef SL_ENGINE_PRESSURE_H
#define SL_ENGINE_PRESSURE_H

#include "sluice.h"

struct sl_pressure;
/* Polls if the ladder is on and interval_ms has passed since the last poll. */
void sl_pressure_tick(sl_session *s);
void sl_pressure_free(struct sl_pressure *pr);

/* The default source: MemAvailable of /proc/meminfo (bytes), -1 if unreadable. */
int64_t sl_pressure_meminfo(const char *path);
/* PSI "some avg10" of /proc/pressure/memory (%), -1 if absent (kernels without PSI). */
double sl_pressure_psi(const char *path);

#endif
