/* Every model with llama.cpp golden data in ../shared/golden (index.json and
 * synth2-index.json), by file stem: the list the engine-path tests (batched,
 * speculative) run on, so that none is left out. */
#ifndef SL_TEST_GOLDEN_MODELS_H
#define SL_TEST_GOLDEN_MODELS_H

static const char *const golden_models[] = {
    "stories260K", "TinyStories-656K-Q8_0", "llama-2-tiny-random", "synth-tiny-q4_k",
    "synth-tiny-q2_k", "synth-tiny-q8_0", "synth-tiny-q4_0", "synth-tiny-qwen2-q4_k",
    "synth2-qwen3-q4_k_m", "synth2-phi3-q4_k_m", "synth2-gemma3-q4_k_m", "synth2-mixtral-q4_k_m",
    "synth2-qwen2moe-q4_k_m", "synth2-qwen3moe-q4_k_m",
};
#define N_GOLDEN_MODELS (sizeof golden_models / sizeof golden_models[0])

#endif
