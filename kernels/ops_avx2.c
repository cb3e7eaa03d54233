/* Float ops and the attention work item of the avx2 level (AVX2+FMA+F16C):
 * ops_driver.h and attention_driver.h instantiated over vmath_avx2.h, in
 * this file so they compile with the level's -m flags. */
#include "vmath_avx2.h"
#include "ops_driver.h"
#include "attention_driver.h"
#include "attention_q_driver.h"

void sl_ops_fill_avx2(sl_kern *k) { ops_fill(k); }

void sl_attn_item_avx2(SL_ATTN_ITEM_ARGS) { attn_item(a, row, kvh, h0, ng, ws); }

void sl_attn_item_q_avx2(SL_ATTN_ITEM_ARGS) { attn_item_q(a, row, kvh, h0, ng, ws); }
