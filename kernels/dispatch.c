/* Run-time ISA selection. One sl_kern table per level, built once (pthread_once)
 * and read-only afterwards: scalar first, then each level overrides what it
 * implements, so a level never has a NULL where scalar has a kernel.
 * x86: cpuid feature bits plus xgetbv (the OS must save the YMM/ZMM state).
 * aarch64: getauxval(AT_HWCAP) ASIMD / ASIMDDP. SLUICE_ISA forces a level;
 * SLUICE_WIDE=0 leaves the few-row tiles and panels out, SLUICE_WIDE=tile
 * the few-row panels only (A/B runs). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kern_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#endif

static const char *const isa_names[SL_ISA_COUNT] = {
    "scalar", "avx2", "avx512", "avx512vnni", "avx512vbmi", "neon", "dotprod"
};

const char *sl_isa_name(int isa)
{
    return isa >= 0 && isa < SL_ISA_COUNT ? isa_names[isa] : "unknown";
}

#if defined(__x86_64__) || defined(__i386__)
static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

/* Bit mask of the levels this CPU (and OS) can run. */
static unsigned detect(void)
{
    unsigned m = 1u << SL_ISA_SCALAR;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return m;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx) return m;
    uint64_t xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) return m;                   /* XMM + YMM state */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return m;
    int avx2 = (b >> 5) & 1, bmi2 = (b >> 8) & 1;
    int f512 = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
    int vnni = (c >> 11) & 1, vbmi = (c >> 1) & 1, gfni = (c >> 8) & 1;
    if (avx2 && fma && f16c && bmi2) {
        m |= 1u << SL_ISA_AVX2;
        if (f512 && dq && bw && vl && (xcr0 & 0xe0) == 0xe0) {  /* opmask + ZMM state */
            m |= 1u << SL_ISA_AVX512;
            if (vnni) m |= 1u << SL_ISA_AVX512VNNI;
            if (vnni && vbmi && gfni) m |= 1u << SL_ISA_AVX512VBMI;
        }
    }
#elif defined(__aarch64__)
    unsigned long hw = getauxval(AT_HWCAP);
    if (hw & HWCAP_ASIMD) {
        m |= 1u << SL_ISA_NEON;
        if (hw & HWCAP_ASIMDDP) m |= 1u << SL_ISA_DOTPROD;
    }
#endif
    return m;
}

static sl_kern tables[SL_ISA_COUNT];
static unsigned avail;
static int best_isa;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void)
{
    avail = detect();
    const char *w = getenv("SLUICE_WIDE");
    int no_wide = w && !strcmp(w, "0"), no_wpanel = w && !strcmp(w, "tile");
    const char *r8 = getenv("SLUICE_ROWS8");
    int no_rows8 = r8 && !strcmp(r8, "0");
    /* SLUICE_MV_BURST=BYTES: rows up to BYTES decode with one prefetch burst
     * each (A/B runs; matvec.c explains the default) */
    const char *mb = getenv("SLUICE_MV_BURST");
    char *mb_end = NULL;
    unsigned long long mbv = mb && *mb ? strtoull(mb, &mb_end, 10) : 0;
    size_t burst_max = mb_end && *mb_end == '\0' ? (size_t)mbv : 0;
    for (int i = 0; i < SL_ISA_COUNT; i++) {
        sl_kern *k = &tables[i];
        k->isa = i;
        k->mv_burst_max = burst_max;
        k->name = isa_names[i];
        if (!(avail & (1u << i))) continue;
        sl_dot_fill_scalar(k);
        sl_ops_fill_scalar(k);
        sl_rows8_fill_scalar(k);
        switch (i) {
#if defined(__x86_64__) || defined(__i386__)
        case SL_ISA_AVX2:
            sl_dot_fill_avx2(k); sl_ops_fill_avx2(k); sl_act_fill_avx2(k);
            sl_dot_fill_iq4_avx2(k);
            sl_gemm_fill_avx2(k);
            sl_dot_fill_iqgrid_avx2(k);
            sl_rows8_fill_avx2(k);
            break;
        case SL_ISA_AVX512:
            sl_dot_fill_avx2(k); sl_ops_fill_avx2(k); sl_act_fill_avx2(k);
            sl_dot_fill_avx512(k); sl_ops_fill_avx512(k);
            sl_dot_fill_iq4_avx512(k);
            sl_gemm_fill_avx2(k);
            sl_dot_fill_iqgrid_avx512(k);
            sl_rows8_fill_avx2(k);
            break;
        case SL_ISA_AVX512VNNI:
        case SL_ISA_AVX512VBMI:
            sl_dot_fill_avx2(k); sl_ops_fill_avx2(k); sl_act_fill_avx2(k);
            sl_gemm_fill_avx2(k);
            sl_dot_fill_avx512(k); sl_ops_fill_avx512(k);
            sl_dot_fill_avx512vnni(k);
            if (i == SL_ISA_AVX512VBMI) sl_dot_fill_avx512vbmi(k);   /* q4_K..q8_0 again */
            sl_dot_fill_iq4_avx512vnni(k);
            sl_gemm_fill_avx512vnni(k);
            sl_wide_fill_avx512vnni(k);
            sl_dot_fill_iqgrid_avx512vnni(k);
            sl_rows8_fill_avx2(k);
            break;
#endif
#if defined(__aarch64__)
        case SL_ISA_NEON:
            sl_dot_fill_neon(k); sl_ops_fill_neon(k);
            sl_dot_fill_iqgrid_neon(k);
            sl_rows8_fill_neon(k);
            break;
        case SL_ISA_DOTPROD:
            sl_dot_fill_neon(k); sl_ops_fill_neon(k);
            sl_dot_fill_dotprod(k);
            sl_gemm_fill_dotprod(k);
            sl_dot_fill_iqgrid_dotprod(k);
            sl_rows8_fill_dotprod(k);
            break;
#endif
        default:
            break;
        }
        if (no_wide)      /* SLUICE_WIDE=0: the 4-row tiles only (A/B runs) */
            memset(k->gemm_wide, 0, sizeof k->gemm_wide);
        if (no_wide || no_wpanel)   /* SLUICE_WIDE=tile: the 8-row tiles, no few-row panel */
            memset(k->wpanel, 0, sizeof k->wpanel);
        if (no_rows8)     /* SLUICE_ROWS8=0: nothing is packed at load (A/B runs) */
            memset(k->rows8_fast, 0, sizeof k->rows8_fast);
        best_isa = i;     /* levels are ordered: the last available one is best */
    }
}

const sl_kern *sl_kern_for(int isa)
{
    pthread_once(&once, init);
    if (isa < 0 || isa >= SL_ISA_COUNT || !(avail & (1u << isa))) return NULL;
    return &tables[isa];
}

int sl_kern_best_checked(const sl_kern **out)
{
    pthread_once(&once, init);
    *out = NULL;
    const char *env = getenv("SLUICE_ISA");
    if (env && *env) {
        for (int i = 0; i < SL_ISA_COUNT; i++)
            if (strcmp(env, isa_names[i]) == 0) {
                if (!(avail & (1u << i))) return -ENOSYS;   /* CPU or build lacks it */
                *out = &tables[i];
                return 0;
            }
        return -EINVAL;                                      /* unknown name */
    }
    *out = &tables[best_isa];
    return 0;
}

const sl_kern *sl_kern_best(void)
{
    const sl_kern *k;
    return sl_kern_best_checked(&k) == 0 ? k : NULL;
}
