/* Float ops and the attention work item of the neon level (A64 NEON (also the dotprod level)):
 * ops_driver.h and attention_driver.h instantiated over vmath_neon.h, in
 * this file so they compile with the level's -m flags. */
#include "vmath_neon.h"
#include "ops_driver.h"
#include "attention_driver.h"
#include "attention_q_driver.h"

void sl_ops_fill_neon(sl_kern *k) { ops_fill(k); }

void sl_attn_item_neon(SL_ATTN_ITEM_ARGS) { attn_item(a, row, kvh, h0, ng, ws); }

void sl_attn_item_q_neon(SL_ATTN_ITEM_ARGS) { attn_item_q(a, row, kvh, h0, ng, ws); }
