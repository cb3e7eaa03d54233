/* Attention work item, neon level (in progress: scalar until the SIMD lands). */
#include "ops_internal.h"

void sl_attn_item_neon(SL_ATTN_ITEM_ARGS)
{
    sl_attn_item_scalar(a, row, kvh, h0, ng, ws);
}
