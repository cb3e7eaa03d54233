/* Float ops and the attention work item of the avx512 level (AVX-512 F/BW/DQ/VL (also the avx512vnni level)):
 * ops_driver.h and attention_driver.h instantiated over vmath_avx512.h, in
 * this file so they compile with the level's -m flags. */
#include "vmath_avx512.h"
#include "ops_driver.h"
#include "attention_driver.h"
#include "attention_q_driver.h"

void sl_ops_fill_avx512(sl_kern *k) { ops_fill(k); }

void sl_attn_item_avx512(SL_ATTN_ITEM_ARGS) { attn_item(a, row, kvh, h0, ng, ws); }

void sl_attn_item_q_avx512(SL_ATTN_ITEM_ARGS) { attn_item_q(a, row, kvh, h0, ng, ws); }
