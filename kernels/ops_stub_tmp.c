/* TEMPORARY (branch kdot only): empty float-op fillers so the library links
 * until the `kops` branch lands in main; delete this file then. */
#include "kern_internal.h"

void sl_ops_fill_scalar(sl_kern *k) { (void)k; }
#if defined(__x86_64__) || defined(__i386__)
void sl_ops_fill_avx2(sl_kern *k) { (void)k; }
void sl_ops_fill_avx512(sl_kern *k) { (void)k; }
#endif
#if defined(__aarch64__)
void sl_ops_fill_neon(sl_kern *k) { (void)k; }
#endif
