/* What batch.c and spec.c need of a session and its model (implemented at the end of
 * session.c, where the structs live). Library-internal. */
#ifndef SL_ENGINE_SESSION_BATCH_H
#define SL_ENGINE_SESSION_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "forward.h"
#include "kv.h"
#include "sampler.h"
#include "sluice.h"

sl_forward *sl_model_batch_forward(sl_model *m);        /* the model's forward pass */
sl_kv *sl_session_batch_kv(sl_session *s);
float *sl_session_batch_logits(sl_session *s);          /* [n_vocab], after the last fed token */
sl_model *sl_session_batch_model(sl_session *s);
int32_t sl_session_batch_n_vocab(const sl_session *s);
bool sl_session_batch_has_logits(const sl_session *s);
sl_sampler *sl_session_batch_sampler(sl_session *s);    /* its sampling settings and PRNG */
int32_t *sl_session_batch_hist(sl_session *s);          /* [n_ctx] tokens in the cache */
/* Changes whenever the session is fed or reset (a state something was derived from is gone). */
uint64_t sl_session_batch_epoch(const sl_session *s);
/* A batch pass led by s (its first member) adds to s's decode profile when
 * s has one on (sl_session_set_profile; else NULL): the forward pass and the
 * pool point at it during the pass, then _done counts the pass's n rows
 * (tokens) and wall time. */
sl_forward_prof *sl_session_batch_prof(sl_session *s);
void sl_session_batch_prof_done(sl_session *s, int n, double ms);
/* After a pass that fed ids[0..n) (kv->n_past already advanced when ok):
 * history, logits flag and decode statistics; on failure, the error. */
void sl_session_batch_fed(sl_session *s, const int32_t *ids, int n, bool ok, double ms, double stall_ms);

#endif
