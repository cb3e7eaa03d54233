/* Token sampler: repetition penalty, top-k, top-p, min-p, temperature, draw
 * (llama.cpp's default chain order); greedy when temp <= 0. Own PRNG
 * (xoshiro256** seeded through splitmix64), so a seed fixes the tokens. */
#ifndef SL_ENGINE_SAMPLER_H
#define SL_ENGINE_SAMPLER_H

#include <stdint.h>

#include "sluice.h"

typedef struct sl_cand { float logit; int32_t id; } sl_cand;

typedef struct sl_sampler {
    sl_sampling p;
    uint64_t s[4];          /* xoshiro256** state */
    int32_t n_vocab;
    sl_cand *cand;          /* [n_vocab] scratch */
    float *prob;            /* [n_vocab] scratch */
    uint8_t *seen;          /* [n_vocab] scratch for the penalty */
} sl_sampler;

int  sl_sampler_init(sl_sampler *s, int32_t n_vocab, const sl_sampling *p);
void sl_sampler_free(sl_sampler *s);
void sl_sampler_seed(sl_sampler *s, uint64_t seed);
/* Uniform double in [0, 1). */
double sl_sampler_uniform(sl_sampler *s);
/* Argmax, ties -> lowest id. */
int32_t sl_sampler_greedy(const float *logits, int32_t n);
/* The distribution sample draws from: cand[0..m) (ids, best first) with
 * unnormalized weights prob[0..m) summing to *sum; returns m. Greedy
 * (temp <= 0): m = 1, the argmax. No PRNG draw. */
int32_t sl_sampler_dist(sl_sampler *s, const float *logits, const int32_t *hist, int32_t n_hist,
                        double *sum);
/* One draw from the distribution left by sl_sampler_dist (weights may have
 * been changed in prob[] since; sum = their total). */
int32_t sl_sampler_draw(sl_sampler *s, int32_t m, double sum);
/* Picks a token from logits given the history (most recent last). */
int32_t sl_sampler_sample(sl_sampler *s, const float *logits, const int32_t *hist, int32_t n_hist);

#endif
