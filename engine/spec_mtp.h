/* MTP drafts for speculative decoding (sluice.h SL_SPEC_MTP): the model's
 * NextN block (forward_mtp.h) follows every pass of one session through a
 * forward hook, so that its cache holds, at position p, the block's rows of
 * token p and the target's hidden state at p - 1; a draft chains the block
 * from the last accepted hidden state, one token a step. */
#ifndef SL_ENGINE_SPEC_MTP_H
#define SL_ENGINE_SPEC_MTP_H

#include <stdint.h>

#include "session_obj.h"

typedef struct sl_mtp sl_mtp;

/* SL_EUNSUPPORTED without a NextN block, SL_EBUSY when the session has one. */
int  sl_mtp_create(sl_mtp **out, sl_session *s);
void sl_mtp_destroy(sl_mtp *mt);
/* Up to k drafts (greedy) after token tok at position pos (the session's
 * next, n_past); the hidden state of pos - 1 must be the last pass's.
 * Returns how many (0: no hidden state for pos - 1), or a status. */
int  sl_mtp_draft(sl_mtp *mt, int32_t tok, int32_t pos, int32_t k, int32_t *out);
/* After a verify pass whose first row was at pos0: positions past `last`
 * were rolled back; the hidden state of `last` is the next draft's. */
void sl_mtp_keep(sl_mtp *mt, int32_t pos0, int32_t last);
/* Wall time the block has spent following the session's passes (inside them). */
double sl_mtp_follow_ms(const sl_mtp *mt);

#endif
