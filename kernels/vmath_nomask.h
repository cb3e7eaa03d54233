/* Partial-vector primitives for levels without lane masks (SL_VMASK 0:
 * avx2, neon), written over the level's full-vector sl_v_ld / sl_v_st /
 * sl_v_ldh / sl_v_sth: "masked" loads are full loads (drivers call them only
 * with left >= SL_VW), partial ones go through a stack copy. Included by
 * vmath_avx2.h and vmath_neon.h after those four. */
#ifndef SL_VMATH_NOMASK_H
#define SL_VMATH_NOMASK_H

#include <string.h>

SL_VINL sl_vf sl_v_ldm(const float *p, int64_t left) { (void)left; return sl_v_ld(p); }
SL_VINL void sl_v_stm(float *p, sl_vf v, int64_t left) { (void)left; sl_v_st(p, v); }
SL_VINL sl_vf sl_v_ldhm(const sl_f16 *p, int64_t left) { (void)left; return sl_v_ldh(p); }

SL_VINL sl_vf sl_v_ldp(const float *p, int64_t n, float fill)
{
    float t[SL_VW];
    for (int i = 0; i < SL_VW; i++) t[i] = i < n ? p[i] : fill;
    return sl_v_ld(t);
}

SL_VINL void sl_v_stp(float *p, sl_vf v, int64_t n)
{
    float t[SL_VW];
    sl_v_st(t, v);
    memcpy(p, t, (size_t)n * sizeof(float));
}

SL_VINL void sl_v_sthp(sl_f16 *p, sl_vf v, int64_t n)
{
    sl_f16 t[SL_VW];
    sl_v_sth(t, v);
    memcpy(p, t, (size_t)n * sizeof(sl_f16));
}

#endif
