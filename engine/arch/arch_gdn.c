/* The tensors of a Gated DeltaNet block (SL_ATTN_RECURRENT): the fused
 * q | k | v projection and the gate z, the causal conv taps, the decay
 * (ssm_a, ssm_dt.bias), the beta / alpha projections, the per-head output
 * norm and the output projection. */
#include "arch.h"
#include "../model_internal.h"

int sl_arch_check_gdn(const sl_model_desc *d, const sl_gguf *g, uint32_t l)
{
    const uint64_t E = (uint64_t)d->n_embd, NV = (uint64_t)d->ssm_nv, DV = (uint64_t)d->ssm_dv;
    const uint64_t CH = 2 * (uint64_t)d->ssm_nk * (uint64_t)d->ssm_dk + NV * DV;
    int rc;
    if ((rc = sl_model_check_layer_tensor(g, l, "attn_norm.weight", E, 0, T_F32)) ||
        (rc = sl_model_check_layer_tensor(g, l, "attn_qkv.weight", E, CH, T_MATRIX)) ||
        (rc = sl_model_check_layer_tensor(g, l, "attn_gate.weight", E, NV * DV, T_MATRIX)) ||
        (rc = sl_model_check_layer_tensor(g, l, "ssm_conv1d.weight", (uint64_t)d->ssm_conv, CH, T_F32)) ||
        (rc = sl_model_check_layer_tensor(g, l, "ssm_dt.bias", NV, 0, T_F32)) ||
        (rc = sl_model_check_layer_tensor(g, l, "ssm_a", NV, 0, T_F32)) ||
        (rc = sl_model_check_layer_tensor(g, l, "ssm_beta.weight", E, NV, T_MATRIX)) ||
        (rc = sl_model_check_layer_tensor(g, l, "ssm_alpha.weight", E, NV, T_MATRIX)) ||
        (rc = sl_model_check_layer_tensor(g, l, "ssm_norm.weight", DV, 0, T_F32)) ||
        (rc = sl_model_check_layer_tensor(g, l, "ssm_out.weight", NV * DV, E, T_MATRIX)))
        return rc;
    return 0;
}
