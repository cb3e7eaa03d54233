/* `sluice mkmodel`: writes a GGUF of one of the engine's architectures (a row
 * of mk_archs) with random weights of a chosen shape (a row of mk_presets)
 * and quantization, for benchmarks of models nobody has to download.
 *
 * Weight data is assembled from a pool of genuinely quantized blocks: per
 * weight type, POOL blocks are quantized once (sl_quant_quantize_row) from
 * N(0,1) floats; every block of every tensor then copies a pool block chosen
 * by a hash of (seed, tensor, block index) and rescales its scale fields by
 * the tensor's standard deviation times a per-block factor in [0.97, 1.03)
 * from the same hash. The result is still a valid quantization of scaled
 * random data, is deterministic from the seed, and no two 4 KiB pages are
 * equal (nothing a cache or dedup could exploit). The file is written
 * streaming, in tensor order, through a fixed-size buffer. */
#include "../engine/cli/cli.h"
#include "../engine/cli/cli_progress.h"
#include "../gguf/gguf.h"
#include "../quant/quant.h"
#include "perf.h"

#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MK_POOL 4096u                 /* blocks per type pool (power of 2) */
#define MK_BUF  (16u << 20)           /* write granule */
#define MK_MAX_TENSORS 2048
#define SL_GGUF_MAX_LAYERS_MK 512     /* gemma4's per-layer key arrays */

/* ---- architectures ------------------------------------------------------ */
/* What a family writes beyond llama's keys and tensors. */
typedef struct {
    const char *name;             /* general.architecture */
    bool qkv_bias;                /* attn_{q,k,v}.bias */
    bool qk_norm;                 /* attn_{q,k}_norm.weight [head_dim] */
    bool post_norms;              /* post_attention_norm, post_ffw_norm */
    bool fused;                   /* attn_qkv (typed like attn_v) and gate|up ffn_up; LongRoPE factors */
    bool tied;                    /* the head is the embedding */
    bool window;                  /* attention.sliding_window (16 up to n_ctx 512, else MK_WINDOW) */
    bool moe_only;                /* only with a MoE preset (the experts come from there) */
    bool expert_width_key;        /* expert_feed_forward_length (llama's loader has none) */
    bool gemma4;                  /* the preset's gemma4 fields: kinds, shared KV, per-layer embeddings */
    bool oai;                     /* gpt-oss: o bias, sinks, post_attention_norm as the FFN's pre-norm,
                                   * router and expert biases, YaRN keys, sliding window every other layer */
    uint32_t swa;                 /* > 0: the window above n_ctx 512 (else MK_WINDOW) */
    float yarn_factor;            /* > 0: rope.scaling.type yarn with this factor ... */
    uint32_t yarn_orig_ctx;       /* ... over this original context */
    const char *def_type;         /* default --type (NULL: q4_k) */
    bool v3moe;                   /* DeepSeek-V3-style MoE: leading dense layers, exp_probs_b, ungated
                                   * shared experts, gating / scale / group keys, NextN blocks */
    bool mla;                     /* multi-head latent attention (deepseek2) */
    bool ffn_norm_post_attn;      /* the pre-FFN norm is named post_attention_norm (glm4moe) */
    bool gdn;                     /* Qwen3.5: Gated DeltaNet layers, gated attention, MTP blocks */
    bool gdn_grouped;             /* Qwen3-Next: beta | alpha as one ssm_ba, no rope sections */
    float rope_base;              /* > 0: instead of the preset's */
    float eps;                    /* attention.layer_norm_rms_epsilon */
    const char *vocab;            /* default vocab file (NULL: the preset's) */
    const char *name_tag;         /* in general.name after the preset */
    const char *what;             /* for --help */
} mk_arch;

#define MK_WINDOW 1024u   /* Gemma 3's sliding window */
#define MK_QWEN_VOCAB "ggml-vocab-qwen2.gguf"

static const mk_arch mk_archs[] = {
    { .name = "llama", .eps = 1e-5f, .name_tag = "", .what = "the base: every other adds to it" },
    { .name = "qwen2", .qkv_bias = true, .rope_base = 1e6f, .eps = 1e-6f, .vocab = MK_QWEN_VOCAB, .name_tag = "qwen2-",
      .what = "llama + q/k/v biases, rope base 1e6, Qwen2 vocab" },
    { .name = "qwen3", .qk_norm = true, .eps = 1e-6f, .vocab = MK_QWEN_VOCAB, .name_tag = "",
      .what = "per-head q/k norms, Qwen2 vocab" },
    { .name = "phi3", .fused = true, .eps = 1e-5f, .vocab = "ggml-vocab-phi-3.gguf", .name_tag = "",
      .what = "fused attn_qkv and gate|up ffn_up, LongRoPE factors when the preset has them" },
    { .name = "gemma3", .qk_norm = true, .post_norms = true, .tied = true, .window = true, .eps = 1e-6f,
      .name_tag = "", .what = "q/k norms, post-norms, sliding window, tied head" },
    /* MoE: qwen2moe has qwen2's attention, qwen3moe qwen3's */
    { .name = "qwen2moe", .qkv_bias = true, .moe_only = true, .expert_width_key = true, .rope_base = 1e6f,
      .eps = 1e-6f, .vocab = MK_QWEN_VOCAB, .name_tag = "", .what = "qwen2 with experts and a shared expert" },
    { .name = "qwen3moe", .qk_norm = true, .moe_only = true, .expert_width_key = true, .eps = 1e-6f,
      .vocab = MK_QWEN_VOCAB, .name_tag = "", .what = "qwen3 with experts" },
    { .name = "gemma4", .qk_norm = true, .post_norms = true, .tied = true, .window = true, .gemma4 = true,
      .expert_width_key = true, .eps = 1e-6f, .name_tag = "", .what = "gemma3 + per-kind head dims, shared-KV layers, per-layer embeddings" },
    /* gpt-oss: the published files' keys; MXFP4 experts, Q8_0 elsewhere by default */
    { .name = "gpt-oss", .qkv_bias = true, .window = true, .moe_only = true, .expert_width_key = true,
      .oai = true, .ffn_norm_post_attn = true, .swa = 128, .yarn_factor = 32.0f, .yarn_orig_ctx = 4096, .rope_base = 150000.0f,
      .eps = 1e-5f, .def_type = "mxfp4_moe", .name_tag = "",
      .what = "q/k/v/o biases, sinks, alternating window, YaRN, biased router and experts" },
    { .name = "glm4moe", .qkv_bias = true, .qk_norm = true, .moe_only = true, .expert_width_key = true,
      .v3moe = true, .ffn_norm_post_attn = true, .eps = 1e-5f, .name_tag = "",
      .what = "GLM-4.5: biases, q/k norms, partial rope, leading dense, sigmoid experts, NextN" },
    { .name = "deepseek2", .moe_only = true, .expert_width_key = true, .v3moe = true, .mla = true, .eps = 1e-6f,
      .name_tag = "", .what = "DeepSeek-V2/V3, Kimi-K2: latent attention, leading dense, grouped experts" },
    { .name = "qwen35moe", .qk_norm = true, .moe_only = true, .expert_width_key = true, .gdn = true,
      .ffn_norm_post_attn = true, .rope_base = 1e7f, .eps = 1e-6f, .vocab = MK_QWEN_VOCAB, .name_tag = "",
      .what = "Qwen3.5/3.6 MoE: Gated DeltaNet layers, gated attention, gated shared expert, MTP" },
    { .name = "qwen35", .qk_norm = true, .gdn = true, .ffn_norm_post_attn = true, .rope_base = 1e7f, .eps = 1e-6f,
      .vocab = MK_QWEN_VOCAB, .name_tag = "", .what = "Qwen3.5/3.6 dense: qwen35moe with a SwiGLU FFN" },
    { .name = "qwen3next", .qk_norm = true, .moe_only = true, .expert_width_key = true, .gdn = true,
      .gdn_grouped = true, .ffn_norm_post_attn = true, .rope_base = 1e7f, .eps = 1e-6f, .vocab = MK_QWEN_VOCAB,
      .name_tag = "", .what = "Qwen3-Next: qwen35moe's layers with grouped v heads and a fused ssm_ba" },
};

/* ---- shapes -------------------------------------------------------------- */
/* A preset with experts fixes its architecture (llama with experts is Mixtral). */
typedef struct {
    const char *name;
    uint32_t n_layer, n_embd, n_ff, n_head, n_head_kv, n_ctx;
    float rope_base;
    const char *vocab;            /* default vocab file under models/vocab */
    const char *arch;             /* NULL: llama (--arch chooses) */
    uint32_t head_dim;            /* 0: n_embd / n_head */
    uint32_t rope_orig_ctx;       /* LongRoPE (fused families): original context (0: no factors) */
    uint32_t n_vocab;             /* > the vocab file's: padded with <unused_N> tokens (0: the file's) */
    uint32_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;   /* experts (total / used / width), shared width */
    const char *what;             /* for --help */
} mk_preset;

/* What a gemma4 preset adds (by preset name): layer l slides iff
 * (l + 1) % swa_period; the last n_kv_shared layers reuse an earlier cache
 * and are n_ff_wide wide (0: n_ff); the full layers have n_head_kv_full kv
 * heads (0: the preset's; else head_count_kv is a per-layer array);
 * full_no_v: those layers have no attn_v (llama.cpp's V = K). */
typedef struct {
    const char *preset;
    uint32_t head_dim_swa, n_embd_ple, n_kv_shared, swa_period, n_ff_wide;
    bool split_exps;              /* MoE: ffn_gate_exps + ffn_up_exps (else the fused ffn_gate_up_exps) */
    uint32_t n_head_kv_full;
    bool full_no_v;               /* the full layers without attn_v (V from the K projection) */
} mk_gemma4_shape;
/* What a DeepSeek-V3-style preset (arch v3moe) adds: leading dense layers,
 * shared experts (each n_ff_exp wide), gating (1 softmax, 2 sigmoid), weight
 * scale / renormalization, groups, NextN blocks after n_layer, rope dims (0:
 * head_dim), MLA ranks and head widths, YaRN (factor 0: none). */
typedef struct {
    const char *preset;
    uint32_t n_lead, n_shared, gating, n_group, n_group_used, nextn, n_rot;
    float w_scale;
    bool w_norm;
    uint32_t q_lora, kv_lora, k_mla, v_mla;
    float yarn_factor, yarn_log_mul;
    uint32_t yarn_orig_ctx;
    bool no_qk_norm;              /* the architecture's q/k norms left out (GLM-4.5-Air: use_qk_norm false) */
} mk_v3shape;

/* What a Qwen3.5 preset (arch gdn) adds: every interval-th layer full
 * attention (the others Gated DeltaNet), the GDN conv taps, head size, q/k
 * and v heads, rope dims and their IMROPE sections, MTP blocks after n_layer. */
typedef struct {
    const char *preset;
    uint32_t interval, conv, state, nk, nv, n_rot, sections[4], nextn;
} mk_gdn_shape;

#define BPE "ggml-vocab-llama-bpe.gguf"
#define SPM "ggml-vocab-llama-spm.gguf"
static const mk_preset mk_presets[] = {
    { "tiny", 2, 256, 768, 4, 2, 512, 1e4f, BPE, .what = "the shape of ../shared/models/synth-tiny-*" },
    { "1b", 16, 2048, 8192, 32, 8, 8192, 5e5f, BPE, .what = "Llama-3.2-1B (untied here)" },
    { "8b", 32, 4096, 14336, 32, 8, 8192, 5e5f, BPE, .what = "Llama-3-8B" },
    { "13b", 40, 5120, 13824, 40, 40, 4096, 1e4f, SPM, .what = "Llama-2-13B (no GQA, SPM vocab)" },
    { "70b", 80, 8192, 28672, 64, 8, 8192, 5e5f, BPE, .what = "Llama-3-70B" },
    { "qwen3-tiny", 2, 256, 768, 4, 2, 512, 1e6f, MK_QWEN_VOCAB, "qwen3", 128, .what = "synth2 shape" },
    { "phi3-tiny", 2, 256, 768, 4, 2, 512, 1e4f, "ggml-vocab-phi-3.gguf", "phi3", 0, 64, .what = "synth2 shape" },
    { "qwen3-8b", 36, 4096, 12288, 32, 8, 40960, 1e6f, MK_QWEN_VOCAB, "qwen3", 128, .what = "Qwen3-8B" },
    { "phi3-mini", 32, 3072, 8192, 32, 32, 131072, 1e4f, "ggml-vocab-phi-3.gguf", "phi3", 0, 4096,
      .what = "Phi-3-mini-128k, LongRoPE from 4096" },
    { "gemma3-tiny", 6, 256, 768, 4, 1, 512, 1e6f, SPM, "gemma3", 128, .what = "synth2 shape" },
    { "gemma3-12b", 48, 3840, 15360, 16, 8, 131072, 1e6f, SPM, "gemma3", 256, 0, 262144,
      .what = "Gemma-3-12B (SPM vocab padded to its 262144 tokens)" },
    { "mixtral-tiny", 2, 256, 512, 4, 2, 512, 1e6f, SPM, "llama", 0, 0, 0, 8, 2, 512, 0, "synth2 shape" },
    { "qwen2moe-tiny", 4, 256, 768, 4, 2, 512, 1e6f, MK_QWEN_VOCAB, "qwen2moe", 0, 0, 0, 8, 2, 256, 512,
      "synth2 shape" },
    { "qwen3moe-tiny", 4, 256, 768, 4, 2, 512, 1e6f, MK_QWEN_VOCAB, "qwen3moe", 128, 0, 0, 16, 4, 256, 0,
      "synth2 shape" },
    { "mixtral-8x7b", 32, 4096, 14336, 32, 8, 32768, 1e6f, SPM, "llama", 0, 0, 0, 8, 2, 14336, 0, "Mixtral-8x7B" },
    { "qwen3-30b-a3b", 48, 2048, 6144, 32, 4, 40960, 1e6f, MK_QWEN_VOCAB, "qwen3moe", 128, 0, 0, 128, 8, 768, 0,
      "Qwen3-30B-A3B" },
    { "gemma4-tiny", 4, 256, 256, 4, 1, 512, 1e6f, SPM, "gemma4", 128, .what = "synth3 shape" },
    { "gemma4-tiny-moe", 4, 256, 256, 4, 1, 512, 1e6f, SPM, "gemma4", 128, 0, 0, 8, 2, 256, 0,
      "gemma4 MoE test shape (fused gate|up experts)" },
    { "gemma4-tiny-moe-split", 4, 256, 256, 4, 2, 512, 1e6f, SPM, "gemma4", 128, 0, 0, 8, 2, 256, 0,
      "gemma4 MoE test shape (separate gate and up experts; kv heads 2 sliding, 1 full)" },
    { "gemma4-tiny-moe-vk", 4, 256, 256, 4, 2, 512, 1e6f, SPM, "gemma4", 128, 0, 0, 8, 2, 256, 0, "as -split, V = K" },
    { "gemma4-e2b", 35, 1536, 6144, 8, 1, 131072, 1e6f, SPM, "gemma4", 512, 0, 262144,
      .what = "Gemma-4-E2B (per-layer embeddings 35 x 256, 20 shared-KV layers)" },
    { "gemma4-e4b", 42, 2560, 10240, 8, 2, 131072, 1e6f, SPM, "gemma4", 512, 0, 262144,
      .what = "Gemma-4-E4B (per-layer embeddings 42 x 256, 18 shared-KV layers)" },
    { "gemma4-31b", 60, 5376, 21504, 32, 16, 262144, 1e6f, SPM, "gemma4", 512, 0, 262144,
      .what = "Gemma-4-31B dense (kv heads 16 sliding, 4 full)" },
    { "gemma4-26b-a4b", 30, 2816, 2112, 16, 8, 262144, 1e6f, SPM, "gemma4", 512, 0, 262144, 128, 8, 704, 0,
      "Gemma-4-26B-A4B (dense FFN + 128 experts, 8 used; kv heads 8 sliding, 2 full)" },
    { "gpt-oss-tiny", 4, 256, 128, 8, 2, 512, 150000.0f, BPE, "gpt-oss", 64, 0, 0, 16, 4, 128, 0, "synth3 shape" },
    /* the vocabulary padded to gpt-oss's o200k size (the tokenizer is not o200k's) */
    { "gpt-oss-20b", 24, 2880, 2880, 64, 8, 131072, 150000.0f, BPE, "gpt-oss", 64, 0, 201088, 32, 4, 2880, 0,
      "gpt-oss-20b (MXFP4 experts)" },
    { "gpt-oss-120b", 36, 2880, 2880, 64, 8, 131072, 150000.0f, BPE, "gpt-oss", 64, 0, 201088, 128, 4, 2880, 0,
      "gpt-oss-120b (MXFP4 experts)" },
    /* DeepSeek-V3-style (the rest of their shape in mk_v3_shapes); n_head_kv 1: MLA's latent cache */
    { "glm4moe-tiny", 3, 256, 768, 4, 2, 512, 1e6f, SPM, "glm4moe", 128, 0, 0, 8, 2, 256, 0, "synth3 shape" },
    { "deepseek2-tiny", 3, 256, 768, 4, 1, 512, 1e4f, SPM, "deepseek2", 0, 0, 0, 8, 2, 256, 0, "synth3 shape" },
    { "deepseek2-tiny-mtp", 3, 256, 768, 4, 1, 512, 1e4f, SPM, "deepseek2", 0, 0, 0, 8, 2, 256, 0,
      "synth3 shape + one NextN block" },
    { "deepseek-v2-lite", 27, 2048, 10944, 16, 1, 163840, 1e4f, BPE, "deepseek2", 0, 0, 0, 64, 6, 1408, 0,
      "DeepSeek-V2-Lite (16B, 2.4B active; no q LoRA)" },
    { "deepseek-v3", 61, 7168, 18432, 128, 1, 163840, 1e4f, BPE, "deepseek2", 0, 0, 129280, 256, 8, 2048, 0,
      "DeepSeek-V3 / R1 (671B, 37B active)" },
    { "kimi-k2", 61, 7168, 18432, 64, 1, 131072, 5e4f, BPE, "deepseek2", 0, 0, 163840, 384, 8, 2048, 0,
      "Kimi-K2 (1T, 32B active)" },
    { "glm-4.5-air", 46, 4096, 10944, 96, 8, 131072, 1e6f, BPE, "glm4moe", 128, 0, 151552, 128, 8, 1408, 0,
      "GLM-4.5-Air (106B, 12B active; no q/k norms)" },
    /* Qwen3.5 (the rest of their shape in mk_gdn_shapes); the vocabulary padded to 248320 */
    { "qwen35moe-tiny", 4, 256, 256, 4, 2, 512, 1e7f, MK_QWEN_VOCAB, "qwen35moe", 128, 0, 0, 8, 2, 256, 256,
      "synth3 shape" },
    { "qwen35moe-tiny-mtp", 4, 256, 256, 4, 2, 512, 1e7f, MK_QWEN_VOCAB, "qwen35moe", 128, 0, 0, 8, 2, 256, 256,
      "synth3 shape + one MTP block" },
    { "qwen3.6-35b-a3b", 40, 2048, 512, 16, 2, 262144, 1e7f, MK_QWEN_VOCAB, "qwen35moe", 256, 0, 248320, 256, 8,
      512, 512, "Qwen3.6-35B-A3B (3B active, one MTP block)" },
    { "qwen3.5-9b", 32, 4096, 12288, 16, 4, 262144, 1e7f, MK_QWEN_VOCAB, "qwen35", 256, 0, 248320,
      .what = "Qwen3.5-9B dense (one MTP block)" },
    { "qwen35-tiny", 4, 256, 512, 4, 2, 512, 1e7f, MK_QWEN_VOCAB, "qwen35", 128, .what = "synth3 shape, dense" },
    /* 60 x (512 experts of 1024) at 4 bits is ~220 GB: written split and --sparse for `plan` */
    { "qwen3.5-397b-a17b", 60, 4096, 1024, 32, 2, 262144, 1e7f, MK_QWEN_VOCAB, "qwen35moe", 256, 0, 248320, 512,
      10, 1024, 1024, "Qwen3.5-397B-A17B (17B active, one MTP block)" },
    { "qwen3next-tiny", 4, 256, 256, 4, 2, 512, 1e7f, MK_QWEN_VOCAB, "qwen3next", 128, 0, 0, 8, 2, 256, 256,
      "synth3 shape, Qwen3-Next layout" },
    { "qwen3-next-80b-a3b", 48, 2048, 5120, 16, 2, 262144, 1e7f, MK_QWEN_VOCAB, "qwen3next", 256, 0, 151936, 512,
      10, 512, 512, "Qwen3-Next-80B-A3B (3B active, one MTP block)" },
};
static const mk_gdn_shape mk_gdn_shapes[] = {
    /* preset, interval, conv, state, q/k heads, v heads, rope dims, sections, MTP blocks */
    { "qwen35moe-tiny", 4, 4, 64, 2, 4, 32, { 6, 5, 5, 0 }, 0 },
    { "qwen35moe-tiny-mtp", 4, 4, 64, 2, 4, 32, { 6, 5, 5, 0 }, 1 },
    { "qwen3.6-35b-a3b", 4, 4, 128, 16, 32, 64, { 11, 11, 10, 0 }, 1 },
    { "qwen3.5-9b", 4, 4, 128, 16, 32, 64, { 11, 11, 10, 0 }, 1 },
    { "qwen35-tiny", 4, 4, 64, 2, 4, 32, { 6, 5, 5, 0 }, 0 },
    { "qwen3.5-397b-a17b", 4, 4, 128, 16, 64, 64, { 11, 11, 10, 0 }, 1 },
    { "qwen3next-tiny", 4, 4, 64, 2, 4, 32, { 0 }, 0 },
    { "qwen3-next-80b-a3b", 4, 4, 128, 16, 32, 64, { 0 }, 1 },
};
static const mk_gemma4_shape mk_gemma4_shapes[] = {
    { "gemma4-tiny", 64, 64, 2, 2, 512, false, 0, false },
    { "gemma4-tiny-moe", 64, 0, 0, 2, 0, false, 0, false },
    { "gemma4-tiny-moe-split", 64, 0, 0, 2, 0, true, 1, false },
    { "gemma4-tiny-moe-vk", 64, 0, 0, 2, 0, true, 1, true },
    { "gemma4-e2b", 256, 256, 20, 5, 12288, false, 0, false },
    { "gemma4-e4b", 256, 256, 18, 6, 0, false, 0, false },
    { "gemma4-31b", 256, 0, 0, 6, 0, false, 4, false },
    { "gemma4-26b-a4b", 256, 0, 0, 6, 0, false, 2, false },
};
#undef BPE
#undef SPM

static const mk_v3shape mk_v3_shapes[] = {
    /* preset, lead, shared, gating, groups, used, nextn, rope, scale, norm, q_lora, kv_lora, k/v_mla, yarn,
     * no q/k norms */
    { "glm4moe-tiny", 1, 1, 2, 1, 1, 1, 64, 2.5f, true, 0, 0, 0, 0, 0, 0, 0, false },
    { "deepseek2-tiny", 1, 1, 2, 4, 2, 0, 64, 2.5f, true, 256, 256, 192, 128, 8, 0.1f, 64, false },
    { "deepseek2-tiny-mtp", 1, 1, 2, 4, 2, 1, 64, 2.5f, true, 256, 256, 192, 128, 8, 0.1f, 64, false },
    { "deepseek-v2-lite", 1, 2, 1, 1, 1, 0, 64, 1.0f, false, 0, 512, 192, 128, 40, 0.0707f, 4096, false },
    { "deepseek-v3", 3, 1, 2, 8, 4, 1, 64, 2.5f, true, 1536, 512, 192, 128, 40, 0.1f, 4096, false },
    { "kimi-k2", 1, 1, 2, 1, 1, 0, 64, 2.827f, true, 1536, 512, 192, 128, 32, 0.1f, 4096, false },
    { "glm-4.5-air", 1, 1, 2, 1, 1, 1, 64, 1.0f, true, 0, 0, 0, 0, 0, 0, 0, true },
};

static const mk_v3shape *find_v3shape(const char *preset)
{
    for (size_t i = 0; i < sizeof mk_v3_shapes / sizeof mk_v3_shapes[0]; i++)
        if (!strcmp(mk_v3_shapes[i].preset, preset)) return &mk_v3_shapes[i];
    return NULL;
}

/* ---- types and mixes --------------------------------------------------- */
enum { MIX_PLAIN = 0, MIX_Q4_K_M, MIX_Q4_K_S, MIX_Q2_K, MIX_MXFP4_MOE };

typedef struct { const char *name; uint32_t type; uint32_t ftype; int mix; } mk_typedef;

/* ftype: llama.cpp's general.file_type numbers. */
static const mk_typedef mk_types[] = {
    { "f32", SL_GGML_F32, 0, MIX_PLAIN },   { "f16", SL_GGML_F16, 1, MIX_PLAIN },
    { "bf16", SL_GGML_BF16, 32, MIX_PLAIN },
    { "q4_0", SL_GGML_Q4_0, 2, MIX_PLAIN }, { "q4_1", SL_GGML_Q4_1, 3, MIX_PLAIN },
    { "q5_0", SL_GGML_Q5_0, 8, MIX_PLAIN }, { "q5_1", SL_GGML_Q5_1, 9, MIX_PLAIN },
    { "q8_0", SL_GGML_Q8_0, 7, MIX_PLAIN },
    { "q2_k", SL_GGML_Q2_K, 10, MIX_PLAIN }, { "q3_k", SL_GGML_Q3_K, 11, MIX_PLAIN },
    { "q4_k", SL_GGML_Q4_K, 14, MIX_PLAIN }, { "q5_k", SL_GGML_Q5_K, 16, MIX_PLAIN },
    { "q6_k", SL_GGML_Q6_K, 18, MIX_PLAIN },
    { "q4_k_s", SL_GGML_Q4_K, 14, MIX_Q4_K_S }, { "q4_k_m", SL_GGML_Q4_K, 15, MIX_Q4_K_M },
    { "q2_k_mix", SL_GGML_Q2_K, 10, MIX_Q2_K },
    { "mxfp4_moe", SL_GGML_Q8_0, 38, MIX_MXFP4_MOE },   /* llama-quantize's MXFP4_MOE: experts MXFP4, rest Q8_0 */
    { "iq4_nl", SL_GGML_IQ4_NL, 25, MIX_PLAIN }, { "iq4_xs", SL_GGML_IQ4_XS, 30, MIX_PLAIN },
    { "tq1_0", SL_GGML_TQ1_0, 36, MIX_PLAIN }, { "tq2_0", SL_GGML_TQ2_0, 37, MIX_PLAIN },
    { "mxfp4", SL_GGML_MXFP4, 38, MIX_PLAIN },
    { "iq2_xxs", SL_GGML_IQ2_XXS, 19, MIX_PLAIN }, { "iq2_xs", SL_GGML_IQ2_XS, 20, MIX_PLAIN },
    { "iq2_s", SL_GGML_IQ2_S, 28, MIX_PLAIN }, { "iq3_xxs", SL_GGML_IQ3_XXS, 23, MIX_PLAIN },
    { "iq3_s", SL_GGML_IQ3_S, 26, MIX_PLAIN }, { "iq1_s", SL_GGML_IQ1_S, 24, MIX_PLAIN },
    { "iq1_m", SL_GGML_IQ1_M, 31, MIX_PLAIN },
};

static int is_kquant(uint32_t t) { return t >= SL_GGML_Q2_K && t <= SL_GGML_Q6_K; }
static int is_iq_grid(uint32_t t)
{
    return t == SL_GGML_IQ2_XXS || t == SL_GGML_IQ2_XS || t == SL_GGML_IQ2_S || t == SL_GGML_IQ3_XXS
        || t == SL_GGML_IQ3_S || t == SL_GGML_IQ1_S || t == SL_GGML_IQ1_M;
}

/* The lm head llama-quantize gives a file of type t: Q6_K for the K-quants,
 * IQ4_NL/IQ4_XS, TQ1_0/TQ2_0 and MXFP4; t itself otherwise. */
static uint32_t default_head(uint32_t t)
{
    switch (t) {
    case SL_GGML_IQ4_NL: case SL_GGML_IQ4_XS: case SL_GGML_TQ1_0: case SL_GGML_TQ2_0:
    case SL_GGML_MXFP4: return SL_GGML_Q6_K;
    default: return is_kquant(t) || is_iq_grid(t) ? SL_GGML_Q6_K : t;
    }
}

/* llama.cpp's "more bits" layers of the _M mixes: the first and last eighth
 * and every third layer in between. */
static int more_bits(uint32_t i, uint32_t n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

typedef enum { T_EMBD, T_OUT, T_NORM, T_BIAS, T_Q, T_K, T_V, T_O, T_GATE, T_UP, T_DOWN } mk_role;

/* Weight type of one matrix under the chosen mix. */
static uint32_t mk_tensor_type(const mk_typedef *td, uint32_t head_type, mk_role role, uint32_t layer,
                               uint32_t n_layer, uint32_t n_head, uint32_t n_head_kv)
{
    uint32_t t = td->type;
    if (role == T_NORM || role == T_BIAS) return SL_GGML_F32;
    if (role == T_OUT) return head_type;
    switch (td->mix) {
    case MIX_Q4_K_M:
        if ((role == T_V || role == T_DOWN) && more_bits(layer, n_layer)) return SL_GGML_Q6_K;
        return t;
    case MIX_Q4_K_S:
        if (role == T_DOWN && layer < n_layer / 8) return SL_GGML_Q5_K;
        return t;
    case MIX_Q2_K:
        if (role == T_V) return n_head >= 4 * n_head_kv ? SL_GGML_Q4_K : SL_GGML_Q3_K;
        if (role == T_DOWN || role == T_O) return SL_GGML_Q3_K;
        return t;
    default:
        return t;
    }
}

/* ---- deterministic randomness ----------------------------------------- */
static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct { uint64_t s; } mk_rng;
static uint64_t rng_next(mk_rng *r) { r->s += 0x9e3779b97f4a7c15ull; return mix64(r->s); }
static double rng_unif(mk_rng *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
static float rng_gauss(mk_rng *r)
{
    double u1 = rng_unif(r), u2 = rng_unif(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
/* Cheap approximate N(0,1) for bulk float tensors: sum of 4 uniforms (Irwin-Hall). */
static float rng_gauss_fast(mk_rng *r)
{
    uint64_t a = rng_next(r), b = rng_next(r);
    double s = (double)(a & 0xffffffffu) + (double)(a >> 32) + (double)(b & 0xffffffffu) + (double)(b >> 32);
    return (float)((s / 4294967296.0 - 2.0) * 1.7320508075688772);
}

/* ---- block pools -------------------------------------------------------- */
/* IQ1_M has no f16 field: its d is the top nibbles of the 4 scale words. */
#define MK_IQ1M_D (-1)

static sl_f16 get_scale(const uint8_t *blk, int off)
{
    sl_f16 h;
    if (off == MK_IQ1M_D) return sl_iq1m_d_bits(blk + 48);
    memcpy(&h, blk + off, 2);
    return h;
}

static void put_scale(uint8_t *blk, int off, sl_f16 h)
{
    if (off != MK_IQ1M_D) { memcpy(blk + off, &h, 2); return; }
    for (int k = 0; k < 4; k++)
        blk[49 + 2 * k] = (uint8_t)((blk[49 + 2 * k] & 0x0f) | ((h >> (4 * k)) & 15) << 4);
}

/* Byte offsets of the f16 scale fields that scale every value of a block
 * (d and, if present, the min/dmin term): scaling both scales the block. */
static int scale_fields(uint32_t t, int off[2])
{
    switch (t) {
    case SL_GGML_Q4_0: case SL_GGML_Q5_0: case SL_GGML_Q8_0: off[0] = 0; return 1;
    case SL_GGML_Q4_1: case SL_GGML_Q5_1: off[0] = 0; off[1] = 2; return 2;
    case SL_GGML_Q2_K: off[0] = 80; off[1] = 82; return 2;
    case SL_GGML_Q3_K: off[0] = 108; return 1;
    case SL_GGML_Q4_K: case SL_GGML_Q5_K: off[0] = 0; off[1] = 2; return 2;
    case SL_GGML_Q6_K: off[0] = 208; return 1;
    case SL_GGML_IQ4_NL: case SL_GGML_IQ4_XS: off[0] = 0; return 1;
    case SL_GGML_TQ1_0: off[0] = 52; return 1;
    case SL_GGML_TQ2_0: off[0] = 64; return 1;
    case SL_GGML_IQ2_XXS: case SL_GGML_IQ2_XS: case SL_GGML_IQ2_S: case SL_GGML_IQ3_XXS:
    case SL_GGML_IQ3_S: case SL_GGML_IQ1_S: off[0] = 0; return 1;
    case SL_GGML_IQ1_M: off[0] = MK_IQ1M_D; return 1;
    default: return 0;             /* MXFP4: an E8M0 exponent, see e8m0_scaled */
    }
}

typedef struct {
    uint32_t type, bpb, epb;      /* bytes and elements per block */
    int nsf, sf[2];
    uint8_t *blocks;              /* MK_POOL * bpb */
    float *scale;                 /* MK_POOL * nsf: the f16 scale fields as float */
} mk_pool;

static int pool_build(mk_pool *p, uint32_t type, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    p->type = type;
    p->epb = sl_gguf_block_elems(type);
    p->bpb = sl_gguf_block_bytes(type);
    if (!p->epb) return -1;
    p->nsf = scale_fields(type, p->sf);
    if (!p->nsf && type != SL_GGML_MXFP4) return -1;
    p->blocks = malloc((size_t)MK_POOL * p->bpb);
    p->scale = malloc(sizeof(float) * MK_POOL * (size_t)(p->nsf ? p->nsf : 1));
    float *x = malloc(sizeof(float) * (size_t)p->epb * 64);
    if (!p->blocks || !p->scale || !x) { free(x); return -1; }
    mk_rng r = { mix64(seed ^ 0x706f6f6cull ^ ((uint64_t)type << 40)) };
    /* 64 blocks per call: the reference quantizers are row-wise. */
    for (uint32_t b = 0; b < MK_POOL; b += 64) {
        for (uint32_t i = 0; i < p->epb * 64; i++) x[i] = rng_gauss(&r);
        int64_t n = sl_quant_quantize_row((int)type, x, p->blocks + (size_t)b * p->bpb, (int64_t)p->epb * 64);
        if (n != (int64_t)p->epb * 64 / p->epb * p->bpb) { free(x); return -1; }
    }
    free(x);
    for (uint32_t b = 0; b < MK_POOL; b++)
        for (int k = 0; k < p->nsf; k++)
            p->scale[b * (uint32_t)p->nsf + (uint32_t)k] =
                sl_f16_to_f32(get_scale(p->blocks + (size_t)b * p->bpb, p->sf[k]));
    return 0;
}

/* MXFP4's scale byte e (2^(e-128)) times f, to the nearest power of two. */
static uint8_t e8m0_scaled(uint8_t e, float f)
{
    long v = (long)e + lrintf(log2f(f));
    return (uint8_t)(v < 1 ? 1 : v > 254 ? 254 : v);
}

static void pool_free(mk_pool *p) { free(p->blocks); free(p->scale); }

/* ---- model description ---------------------------------------------------- */
typedef struct {
    char name[64];
    uint32_t type, n_dims;
    uint64_t ne[3];               /* 3-D: expert tensors [ne0, ne1, n_expert] */
    float sigma, mean;            /* values ~ mean + N(0, sigma) */
    uint64_t nbytes;
} mk_tensor;

typedef struct {
    const mk_arch *arch;
    uint32_t n_layer, n_embd, n_ff, n_head, n_head_kv, n_ctx, n_vocab;
    uint32_t n_vocab_file;        /* tokens taken from the vocab file (the rest: padding) */
    uint32_t head_dim, rope_orig_ctx;
    float rope_base, eps;
    bool tied;
    /* MoE (n_expert 0: dense FFN) */
    uint32_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
    /* gemma4 (mk_preset) */
    uint32_t head_dim_swa, n_embd_ple, n_kv_shared, swa_period, n_ff_wide;
    bool split_exps;
    uint32_t n_head_kv_full;
    bool full_no_v;
    const mk_v3shape *v3;         /* the preset's DeepSeek-V3-style fields (arch v3moe) */
    const mk_gdn_shape *gdn;      /* the preset's Qwen3.5 fields (arch gdn) */
    int n_tensors;
    mk_tensor t[MK_MAX_TENSORS];
} mk_model;

/* A matrix whose rows the type cannot hold (DeepSeek's attn_k_b of 128-value
 * rows, the 1408-wide experts of V2-Lite and GLM-4.5-Air) falls back as
 * llama-quantize does: Q5_0 for the 256-blocks. */
static uint32_t row_fit(uint32_t type, uint64_t row)
{
    uint64_t be = sl_gguf_block_elems(type);
    return be && row % be ? (row % 32 ? SL_GGML_F16 : SL_GGML_Q5_0) : type;
}

static int add_t(mk_model *m, const char *name, uint32_t type, uint32_t nd, uint64_t ne0, uint64_t ne1,
                 float sigma, float mean)
{
    if (m->n_tensors >= MK_MAX_TENSORS) return -1;
    /* the other presets' shapes always fit (gemma4: the 704-wide experts of the 26B-A4B) */
    if ((m->v3 || m->arch->gemma4) && nd > 1) type = row_fit(type, ne0);
    mk_tensor *t = &m->t[m->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type; t->n_dims = nd; t->ne[0] = ne0; t->ne[1] = nd > 1 ? ne1 : 1; t->ne[2] = 1;
    t->sigma = sigma; t->mean = mean;
    if (sl_gguf_tensor_size(type, nd, t->ne, &t->nbytes)) return -1;
    return 0;
}

/* A 3-D tensor [ne0, ne1, n2] (experts: one [ne0, ne1] matrix each). */
static int add_t3(mk_model *m, const char *name, uint32_t type, uint64_t ne0, uint64_t ne1, uint64_t n2, float sigma)
{
    if (add_t(m, name, type, 2, ne0, ne1, sigma, 0)) return -1;
    mk_tensor *t = &m->t[m->n_tensors - 1];
    t->n_dims = 3;
    t->ne[2] = n2;
    return sl_gguf_tensor_size(t->type, 3, t->ne, &t->nbytes) ? -1 : 0;
}

/* The routed experts of layer l: router [n_embd, n_expert] F32 and the 3-D
 * gate/up [n_embd, n_ff_exp, n_expert] and down [n_ff_exp, n_embd, n_expert]
 * (MXFP4 in the mxfp4_moe mix); gpt-oss's router bias [n_expert] and expert
 * biases [width, n_expert] (F32); qwen2moe's shared expert and its [n_embd]
 * sigmoid gate. */
static int add_experts(mk_model *m, const mk_typedef *td, uint32_t head_type, uint32_t l, float s,
                       float s_gate)
{
    const uint32_t E = m->n_embd, FE = m->n_ff_exp, NE = m->n_expert, FS = m->n_ff_shexp;
    static const struct { const char *n; mk_role role; int down; } exps[] = {
        { "ffn_gate_exps.weight", T_GATE, 0 }, { "ffn_up_exps.weight", T_UP, 0 },
        { "ffn_down_exps.weight", T_DOWN, 1 },
    };
    char nm[64];
    snprintf(nm, sizeof nm, "blk.%u.ffn_gate_inp.weight", l);
    int rc = add_t(m, nm, SL_GGML_F32, 2, E, NE, 0.1f, 0);
    if (m->arch->oai && !rc) {
        snprintf(nm, sizeof nm, "blk.%u.ffn_gate_inp.bias", l);
        rc = add_t(m, nm, SL_GGML_F32, 1, NE, 1, 0.1f, 0);
        for (int i = 0; i < 3 && !rc; i++) {
            snprintf(nm, sizeof nm, "blk.%u.%.*s.bias", l, (int)strlen(exps[i].n) - 7, exps[i].n);
            rc = add_t(m, nm, SL_GGML_F32, 2, exps[i].down ? E : FE, NE, 0.02f, 0);
        }
    }
    for (int i = 0; i < 3 && !rc; i++) {
        snprintf(nm, sizeof nm, "blk.%u.%s", l, exps[i].n);
        uint32_t type = td->mix == MIX_MXFP4_MOE ? SL_GGML_MXFP4
                      : mk_tensor_type(td, head_type, exps[i].role, l, m->n_layer, m->n_head, m->n_head_kv);
        rc = add_t3(m, nm, type, exps[i].down ? FE : E, exps[i].down ? E : FE, NE, exps[i].role == T_GATE ? s_gate : s);
    }
    if (m->arch->v3moe && !rc) {   /* the selection bias */
        snprintf(nm, sizeof nm, "blk.%u.exp_probs_b.bias", l);
        rc = add_t(m, nm, SL_GGML_F32, 1, NE, 1, 0.02f, 0);
    }
    if (!FS || rc) return rc;
    static const struct { const char *n; mk_role role; int down; } sh[] = {
        { "ffn_gate_shexp.weight", T_GATE, 0 }, { "ffn_up_shexp.weight", T_UP, 0 },
        { "ffn_down_shexp.weight", T_DOWN, 1 },
    };
    snprintf(nm, sizeof nm, "blk.%u.ffn_gate_inp_shexp.weight", l);
    if (!m->arch->v3moe) rc = add_t(m, nm, SL_GGML_F32, 1, E, 1, 0.1f, 0);   /* v3: ungated */
    for (int i = 0; i < 3 && !rc; i++) {
        snprintf(nm, sizeof nm, "blk.%u.%s", l, sh[i].n);
        rc = add_t(m, nm, mk_tensor_type(td, head_type, sh[i].role, l, m->n_layer, m->n_head, m->n_head_kv),
                   2, sh[i].down ? FS : E, sh[i].down ? E : FS, sh[i].role == T_GATE ? s_gate : s, 0);
    }
    return rc;
}

/* The tensors of layer l that differ from llama's: post-norms, q/k norms of
 * head_dim; the fused attn_qkv (typed like attn_v, as llama-quantize does)
 * and the fused gate|up ffn_up. Returns 1 if it wrote the attention
 * projections itself (and *fused_ffn when also the gate/up pair). */
static int mk_dense_layer(mk_model *m, const mk_typedef *td, uint32_t head_type, uint32_t l, float s,
                          float s_qk, int *rc, bool *fused_ffn)
{
    uint32_t hd = m->head_dim, q = hd * m->n_head, kv = hd * m->n_head_kv, L = m->n_layer;
    char nm[64];
    *fused_ffn = false;
    if (m->arch->post_norms) {   /* around attention and FFN */
        snprintf(nm, sizeof nm, "blk.%u.post_attention_norm.weight", l);
        *rc |= add_t(m, nm, SL_GGML_F32, 1, m->n_embd, 1, 0.1f, 1.0f);
        snprintf(nm, sizeof nm, "blk.%u.post_ffw_norm.weight", l);
        *rc |= add_t(m, nm, SL_GGML_F32, 1, m->n_embd, 1, 0.1f, 1.0f);
    }
    if (m->arch->qk_norm && !(m->v3 && m->v3->no_qk_norm)) {
        snprintf(nm, sizeof nm, "blk.%u.attn_q_norm.weight", l);
        *rc |= add_t(m, nm, SL_GGML_F32, 1, hd, 1, 0.1f, 1.0f);
        snprintf(nm, sizeof nm, "blk.%u.attn_k_norm.weight", l);
        *rc |= add_t(m, nm, SL_GGML_F32, 1, hd, 1, 0.1f, 1.0f);
        return 0;
    }
    if (!m->arch->fused) return 0;
    snprintf(nm, sizeof nm, "blk.%u.attn_qkv.weight", l);
    *rc |= add_t(m, nm, mk_tensor_type(td, head_type, T_V, l, L, m->n_head, m->n_head_kv), 2, m->n_embd,
                 q + 2 * kv, s_qk, 0);
    snprintf(nm, sizeof nm, "blk.%u.ffn_up.weight", l);
    *rc |= add_t(m, nm, mk_tensor_type(td, head_type, T_UP, l, L, m->n_head, m->n_head_kv), 2, m->n_embd,
                 2 * (uint64_t)m->n_ff, s, 0);
    *fused_ffn = true;
    return 1;
}

/* gemma4: layer l's kind. */
static bool g4_swa(const mk_model *m, uint32_t l) { return m->swa_period && (l + 1) % m->swa_period; }
static bool g4_shared(const mk_model *m, uint32_t l) { return l + m->n_kv_shared >= m->n_layer; }
static uint32_t g4_ff(const mk_model *m, uint32_t l)
{
    return g4_shared(m, l) && m->n_ff_wide ? m->n_ff_wide : m->n_ff;
}
static uint32_t g4_kv_heads(const mk_model *m, uint32_t l)
{
    return !g4_swa(m, l) && m->n_head_kv_full ? m->n_head_kv_full : m->n_head_kv;
}

/* A matrix in its role's type, or Q5_0 when its rows do not fit that
 * type's blocks (llama-quantize's fallback: gemma4's 64-wide proj). */
static int add_fit(mk_model *m, const mk_typedef *td, uint32_t head_type, const char *nm, mk_role role, uint32_t l,
                   uint64_t ne0, uint64_t ne1, float s)
{
    uint32_t type = mk_tensor_type(td, head_type, role, l, m->n_layer, m->n_head, m->n_head_kv);
    uint64_t ne[3] = { ne0, ne1, 1 }, sz;
    if (sl_gguf_tensor_size(type, 2, ne, &sz)) type = SL_GGML_Q5_0;
    return add_t(m, nm, type, 2, ne0, ne1, s, 0);
}

/* Gemma 4's MoE part of layer l (every layer of the 26B-A4B): the router
 * [n_embd, n_expert] and its input scale, the norms around both branches,
 * fused (or separate) gate|up experts, the down experts and their scales. */
static int g4_experts(mk_model *m, const mk_typedef *td, uint32_t head_type, uint32_t l)
{
    const uint64_t E = m->n_embd, FE = m->n_ff_exp, NE = m->n_expert;
    static const char *const norms[] = { "ffn_gate_inp.scale", "pre_ffw_norm_2.weight", "post_ffw_norm_1.weight",
                                         "post_ffw_norm_2.weight" };
    char nm[64];
    int rc = 0;
    for (int i = 0; i < 4 && !rc; i++) {
        snprintf(nm, sizeof nm, "blk.%u.%s", l, norms[i]);
        rc = add_t(m, nm, SL_GGML_F32, 1, E, 1, 0.1f, 1.0f);
    }
    /* its input is rms 1 / sqrt(n_embd) per value: logits of sd 2 keep routing decisive */
    snprintf(nm, sizeof nm, "blk.%u.ffn_gate_inp.weight", l);
    rc |= add_t(m, nm, SL_GGML_F32, 2, E, NE, 2.0f, 0);
    const uint32_t tg = mk_tensor_type(td, head_type, T_GATE, l, m->n_layer, m->n_head, m->n_head_kv);
    if (m->split_exps) {
        snprintf(nm, sizeof nm, "blk.%u.ffn_gate_exps.weight", l);
        rc |= add_t3(m, nm, tg, E, FE, NE, 0.08f);
        snprintf(nm, sizeof nm, "blk.%u.ffn_up_exps.weight", l);
        rc |= add_t3(m, nm, mk_tensor_type(td, head_type, T_UP, l, m->n_layer, m->n_head, m->n_head_kv), E, FE,
                     NE, 0.02f);
    } else {
        snprintf(nm, sizeof nm, "blk.%u.ffn_gate_up_exps.weight", l);
        rc |= add_t3(m, nm, tg, E, 2 * FE, NE, 0.05f);
    }
    snprintf(nm, sizeof nm, "blk.%u.ffn_down_exps.weight", l);
    rc |= add_t3(m, nm, mk_tensor_type(td, head_type, T_DOWN, l, m->n_layer, m->n_head, m->n_head_kv), FE, E, NE,
                 0.02f);
    snprintf(nm, sizeof nm, "blk.%u.ffn_down_exps.scale", l);
    return rc | add_t(m, nm, SL_GGML_F32, 1, NE, 1, 0.2f, 1.0f);
}

/* Gemma 4: sliding / full layers of their own head dims, no K/V in the
 * shared layers, per-layer embeddings (the table typed like the tied head),
 * the output scale; rope_freqs all 1 (no proportional rope in these files). */
static int build_gemma4(mk_model *m, const mk_typedef *td, uint32_t head_type)
{
    const uint32_t L = m->n_layer, E = m->n_embd, P = m->n_embd_ple;
    const float s = 0.02f, s_qk = 1.28f / sqrtf((float)E);
    const uint64_t LP = (uint64_t)L * P;
    char nm[64];
    int rc = add_fit(m, td, head_type, "token_embd.weight", T_OUT, 0, E, m->n_vocab, s);
    if (P) {
        rc |= add_fit(m, td, head_type, "per_layer_token_embd.weight", T_OUT, 0, LP, m->n_vocab, s);
        rc |= add_t(m, "per_layer_model_proj.weight", SL_GGML_F32, 2, E, LP, s, 0);
        rc |= add_t(m, "per_layer_proj_norm.weight", SL_GGML_F32, 1, P, 1, 0.1f, 1.0f);
    }
    rc |= add_t(m, "rope_freqs.weight", SL_GGML_F32, 1, m->head_dim / 2, 1, 0, 1.0f);
#define G4(suffix, role, a, b, sig)                                                                 \
    do {                                                                                            \
        snprintf(nm, sizeof nm, "blk.%u.%s", l, suffix);                                            \
        rc |= role == T_NORM ? add_t(m, nm, SL_GGML_F32, 1, a, 1, sig, 1.0f)                       \
                             : add_fit(m, td, head_type, nm, role, l, a, b, sig);                   \
    } while (0)
    for (uint32_t l = 0; l < L && !rc; l++) {
        const uint32_t hd = g4_swa(m, l) ? m->head_dim_swa : m->head_dim, F = g4_ff(m, l);
        G4("attn_norm.weight", T_NORM, E, 1, 0.1f);
        G4("attn_q.weight", T_Q, E, hd * m->n_head, s_qk);
        G4("attn_q_norm.weight", T_NORM, hd, 1, 0.1f);
        if (!g4_shared(m, l)) {
            G4("attn_k.weight", T_K, E, hd * g4_kv_heads(m, l), s_qk);
            if (g4_swa(m, l) || !m->full_no_v) G4("attn_v.weight", T_V, E, hd * g4_kv_heads(m, l), s);
            G4("attn_k_norm.weight", T_NORM, hd, 1, 0.1f);
        }
        G4("attn_output.weight", T_O, hd * m->n_head, E, s);
        G4("post_attention_norm.weight", T_NORM, E, 1, 0.1f);
        G4("ffn_norm.weight", T_NORM, E, 1, 0.1f);
        G4("ffn_gate.weight", T_GATE, E, F, 0.08f);
        G4("ffn_up.weight", T_UP, E, F, s);
        G4("ffn_down.weight", T_DOWN, F, E, s);
        G4("post_ffw_norm.weight", T_NORM, E, 1, 0.1f);
        if (m->n_expert) rc |= g4_experts(m, td, head_type, l);
        if (P) {
            G4("inp_gate.weight", T_GATE, E, P, 0.08f);
            G4("proj.weight", T_DOWN, P, E, s);
            G4("post_norm.weight", T_NORM, E, 1, 0.1f);
        }
        snprintf(nm, sizeof nm, "blk.%u.layer_output_scale.weight", l);
        rc |= add_t(m, nm, SL_GGML_F32, 1, 1, 1, 0, 1.0f);
    }
#undef G4
    return rc | add_t(m, "output_norm.weight", SL_GGML_F32, 1, E, 1, 0.1f, 1.0f);
}

/* gemma4's keys beyond the common ones: per-layer arrays, the SWA kind. */
static int gemma4_keys(sl_gguf_writer *w, const mk_model *m)
{
    uint8_t swa[SL_GGUF_MAX_LAYERS_MK];
    uint32_t ff[SL_GGUF_MAX_LAYERS_MK], kvh[SL_GGUF_MAX_LAYERS_MK];
    if (m->n_layer > SL_GGUF_MAX_LAYERS_MK) return -1;
    for (uint32_t l = 0; l < m->n_layer; l++) { swa[l] = g4_swa(m, l); ff[l] = g4_ff(m, l); kvh[l] = g4_kv_heads(m, l); }
    int rc = sl_gguf_writer_set_arr(w, "gemma4.attention.sliding_window_pattern", SL_GGUF_BOOL, swa, m->n_layer);
    if (m->n_head_kv_full)   /* instead of the one count */
        rc |= sl_gguf_writer_set_arr(w, "gemma4.attention.head_count_kv", SL_GGUF_U32, kvh, m->n_layer);
    rc |= sl_gguf_writer_set_arr(w, "gemma4.feed_forward_length", SL_GGUF_U32, ff, m->n_layer);
    rc |= sl_gguf_writer_set_u32(w, "gemma4.attention.key_length_swa", m->head_dim_swa);
    rc |= sl_gguf_writer_set_u32(w, "gemma4.attention.value_length_swa", m->head_dim_swa);
    rc |= sl_gguf_writer_set_u32(w, "gemma4.rope.dimension_count_swa", m->head_dim_swa);
    rc |= sl_gguf_writer_set_f32(w, "gemma4.rope.freq_base_swa", 1e4f);
    rc |= sl_gguf_writer_set_u32(w, "gemma4.attention.shared_kv_layers", m->n_kv_shared);
    rc |= sl_gguf_writer_set_u32(w, "gemma4.embedding_length_per_layer_input", m->n_embd_ple);
    rc |= sl_gguf_writer_set_f32(w, "gemma4.final_logit_softcapping", 30.0f);
    return rc;
}

/* Layer l's latent attention (deepseek2): the q LoRA (or attn_q), the kv
 * latent with the shared rope key, the per-head k_b / v_b (3-D, one matrix a
 * head) and the output. */
static int mk_mla_attn(mk_model *m, const mk_typedef *td, uint32_t head_type, uint32_t l, float s, float s_qk)
{
    const mk_v3shape *p = m->v3;
    const uint64_t E = m->n_embd, H = m->n_head, KVL = p->kv_lora, R = p->n_rot, nope = p->k_mla - p->n_rot;
    const uint32_t L = m->n_layer;
    char nm[64];
    int rc = 0;
#define MT(suffix, role, nd, a, b, sig, mu)                                                     \
    (snprintf(nm, sizeof nm, "blk.%u.%s", l, suffix),                                           \
     add_t(m, nm, mk_tensor_type(td, head_type, role, l, L, m->n_head, m->n_head_kv), nd, a, b, sig, mu))
    if (p->q_lora) {
        rc |= MT("attn_q_a.weight", T_Q, 2, E, p->q_lora, s_qk, 0);
        rc |= MT("attn_q_a_norm.weight", T_NORM, 1, p->q_lora, 1, 0.1f, 1.0f);
        rc |= MT("attn_q_b.weight", T_Q, 2, p->q_lora, H * p->k_mla, s_qk, 0);
    } else {
        rc |= MT("attn_q.weight", T_Q, 2, E, H * p->k_mla, s_qk, 0);
    }
    rc |= MT("attn_kv_a_mqa.weight", T_K, 2, E, KVL + R, s_qk, 0);
    rc |= MT("attn_kv_a_norm.weight", T_NORM, 1, KVL, 1, 0.1f, 1.0f);
    rc |= MT("attn_output.weight", T_O, 2, H * p->v_mla, E, s, 0);
#undef MT
    static const struct { const char *n; mk_role role; } hv[] = {
        { "attn_k_b.weight", T_K }, { "attn_v_b.weight", T_V },
    };
    for (int i = 0; i < 2 && !rc; i++) {
        uint64_t cols = i ? KVL : nope, rows = i ? p->v_mla : KVL;
        uint32_t type = row_fit(mk_tensor_type(td, head_type, hv[i].role, l, L, m->n_head, m->n_head_kv), cols);
        snprintf(nm, sizeof nm, "blk.%u.%s", l, hv[i].n);
        if ((rc = add_t(m, nm, type, 2, cols, rows, s_qk, 0))) break;
        mk_tensor *t = &m->t[m->n_tensors - 1];
        t->n_dims = 3;
        t->ne[2] = H;
        rc = sl_gguf_tensor_size(t->type, 3, t->ne, &t->nbytes) ? -1 : 0;
    }
    return rc;
}

/* The NextN block's own tensors (glm4moe, deepseek-v3, Qwen3.5's MTP): checked by the
 * engine, never run. */
static int mk_nextn(mk_model *m, uint32_t head_type, uint32_t l, float s)
{
    static const char *const norms[] = { "nextn.enorm.weight", "nextn.hnorm.weight", "nextn.shared_head_norm.weight" };
    char nm[64];
    snprintf(nm, sizeof nm, "blk.%u.nextn.eh_proj.weight", l);
    int rc = add_t(m, nm, head_type, 2, 2 * (uint64_t)m->n_embd, m->n_embd, s, 0);
    for (int i = 0; i < 3 && !rc; i++) {
        snprintf(nm, sizeof nm, "blk.%u.%s", l, norms[i]);
        rc = add_t(m, nm, SL_GGML_F32, 1, m->n_embd, 1, 0.1f, 1.0f);
    }
    return rc;
}

/* The trailing NextN / MTP blocks (after n_layer). */
static uint32_t mk_n_nextn(const mk_model *m)
{
    return m->v3 ? m->v3->nextn : m->gdn ? m->gdn->nextn : 0;
}

/* Layer l of a Qwen3.5 stack is Gated DeltaNet (the MTP blocks never). */
static bool mk_gdn_layer(const mk_model *m, uint32_t l)
{
    return m->gdn && l < m->n_layer && (l + 1) % m->gdn->interval;
}

/* A Gated DeltaNet block (qwen35, qwen35moe, qwen3next): fused q | k | v and
 * the gate z, the conv taps, decay (ssm_a negative, ssm_dt), beta / alpha
 * (qwen3next: one ssm_ba, rows per q/k head [beta x r | alpha x r]), the
 * per-head norm and the output; conv taps and vectors F32. */
static int mk_gdn_attn(mk_model *m, const mk_typedef *td, uint32_t head_type, uint32_t l, float s, float s_qk)
{
    const mk_gdn_shape *p = m->gdn;
    const uint64_t E = m->n_embd, NV = p->nv, V = NV * p->state, CH = 2 * (uint64_t)p->nk * p->state + V;
    const struct { const char *n; mk_role role; uint64_t a, b; float sig, mu; } ts[] = {
        { "attn_qkv.weight", T_V, E, CH, s_qk, 0 }, { "attn_gate.weight", T_Q, E, V, s, 0 },
        { "ssm_conv1d.weight", T_NORM, p->conv, CH, 0.3f, 0 }, { "ssm_dt.bias", T_NORM, NV, 0, 0.5f, 0 },
        { "ssm_a", T_NORM, NV, 0, 0.2f, -1.0f }, { "ssm_beta.weight", T_Q, E, NV, s_qk, 0 },
        { "ssm_alpha.weight", T_Q, E, NV, s_qk, 0 }, { "ssm_norm.weight", T_NORM, p->state, 0, 0.1f, 1.0f },
        { "ssm_out.weight", T_O, V, E, s, 0 }, { "ssm_ba.weight", T_Q, E, 2 * NV, s_qk, 0 },
    };
    char nm[64];
    int rc = 0;
    for (size_t i = 0; i < sizeof ts / sizeof ts[0] && !rc; i++) {
        const bool ba = !strcmp(ts[i].n, "ssm_ba.weight"), split_ba = !strncmp(ts[i].n, "ssm_beta", 8) ||
                                                                      !strncmp(ts[i].n, "ssm_alpha", 9);
        if (m->arch->gdn_grouped ? split_ba : ba) continue;
        snprintf(nm, sizeof nm, "blk.%u.%s", l, ts[i].n);
        rc = add_t(m, nm, mk_tensor_type(td, head_type, ts[i].role, l, m->n_layer, m->n_head, m->n_head_kv),
                   ts[i].b ? 2 : 1, ts[i].a, ts[i].b ? ts[i].b : 1, ts[i].sig, ts[i].mu);
    }
    return rc;
}

static int build_model(mk_model *m, const mk_typedef *td, uint32_t head_type)
{
    if (m->arch->gemma4) return build_gemma4(m, td, head_type);
    uint32_t hd = m->head_dim, qd = hd * m->n_head, kv = hd * m->n_head_kv, L = m->n_layer;
    float s = 0.02f;                                  /* matrices */
    float s_qk = 1.28f / sqrtf((float)m->n_embd);      /* 0.08 at n_embd 256 */
    float s_out = 8.0f / sqrtf((float)m->n_embd);      /* logits std ~8 */
    char nm[64];
    /* tied: the embedding is also the head, typed as the head (as llama-quantize does) */
    int rc = add_t(m, "token_embd.weight",
                   mk_tensor_type(td, head_type, m->tied ? T_OUT : T_EMBD, 0, L, m->n_head, m->n_head_kv),
                   2, m->n_embd, m->n_vocab, s, 0);
#define LT(suffix, role, nd, a, b, sig, mu)                                                     \
    do {                                                                                        \
        snprintf(nm, sizeof nm, "blk.%u.%s", l, suffix);                                        \
        rc |= add_t(m, nm, mk_tensor_type(td, head_type, role, l, L, m->n_head, m->n_head_kv),  \
                    nd, a, b, sig, mu);                                                         \
    } while (0)
    if (m->rope_orig_ctx) {
        rc |= add_t(m, "rope_factors_long.weight", SL_GGML_F32, 1, hd / 2, 1, 0.1f, 1.0f);
        rc |= add_t(m, "rope_factors_short.weight", SL_GGML_F32, 1, hd / 2, 1, 0.1f, 1.0f);
    }
    const uint32_t n_lead = m->v3 ? m->v3->n_lead : 0, n_all = L + mk_n_nextn(m);
    for (uint32_t l = 0; l < n_all && !rc; l++) {
        bool fused_ffn = false;
        LT("attn_norm.weight", T_NORM, 1, m->n_embd, 1, 0.1f, 1.0f);
        const bool rec = mk_gdn_layer(m, l);
        if (rec) {
            rc |= mk_gdn_attn(m, td, head_type, l, s, s_qk);
        } else if (m->arch->mla) {
            rc |= mk_mla_attn(m, td, head_type, l, s, s_qk);
        } else if (!mk_dense_layer(m, td, head_type, l, s, s_qk, &rc, &fused_ffn)) {
            /* Qwen3.5's gated attention: q | gate per head */
            LT("attn_q.weight", T_Q, 2, m->n_embd, m->gdn ? 2 * qd : qd, s_qk, 0);
            LT("attn_k.weight", T_K, 2, m->n_embd, kv, s_qk, 0);
            LT("attn_v.weight", T_V, 2, m->n_embd, kv, s, 0);
        }
        if (!m->arch->mla && !rec) LT("attn_output.weight", T_O, 2, qd, m->n_embd, s, 0);
        if (m->arch->qkv_bias) {
            LT("attn_q.bias", T_BIAS, 1, qd, 1, s, 0);
            LT("attn_k.bias", T_BIAS, 1, kv, 1, s, 0);
            LT("attn_v.bias", T_BIAS, 1, kv, 1, s, 0);
        }
        if (m->arch->oai) {   /* sinks ~ N(0, 1): the scale of the scores */
            LT("attn_output.bias", T_BIAS, 1, m->n_embd, 1, s, 0);
            LT("attn_sinks.weight", T_BIAS, 1, m->n_head, 1, 1.0f, 0);
        }
        LT(m->arch->ffn_norm_post_attn ? "post_attention_norm.weight" : "ffn_norm.weight", T_NORM, 1, m->n_embd,
           1, 0.1f, 1.0f);
        if (l >= L) rc |= mk_nextn(m, head_type, l, s);
        if (m->n_expert && l >= n_lead) {   /* the synth2 recipe: gates N(0, 0.08^2) so routing matters */
            rc |= add_experts(m, td, head_type, l, s, 0.08f);
            continue;
        }
        if (!fused_ffn) {
            LT("ffn_gate.weight", T_GATE, 2, m->n_embd, m->n_ff, s, 0);
            LT("ffn_up.weight", T_UP, 2, m->n_embd, m->n_ff, s, 0);
        }
        LT("ffn_down.weight", T_DOWN, 2, m->n_ff, m->n_embd, s, 0);
    }
#undef LT
    rc |= add_t(m, "output_norm.weight", SL_GGML_F32, 1, m->n_embd, 1, 0.1f, 1.0f);
    if (!m->tied) rc |= add_t(m, "output.weight", head_type, 2, m->n_embd, m->n_vocab, s_out, 0);
    return rc;
}

/* ---- data generation ------------------------------------------------------- */
typedef struct {
    uint64_t seed;
    mk_pool pools[SL_GGML_TYPE_COUNT];
    bool have[SL_GGML_TYPE_COUNT];
} mk_gen;

static mk_pool *gen_pool(mk_gen *g, uint32_t type)
{
    if (type >= SL_GGML_TYPE_COUNT) return NULL;
    if (!g->have[type]) {
        if (pool_build(&g->pools[type], type, g->seed)) { pool_free(&g->pools[type]); return NULL; }
        g->have[type] = true;
    }
    return &g->pools[type];
}

/* Rows [r0, r0+nr) of tensor ti into dst. Depends only on (seed, tensor, row/block). */
static int gen_rows(mk_gen *g, const mk_model *m, int ti, uint64_t r0, uint64_t nr, uint8_t *dst)
{
    const mk_tensor *t = &m->t[ti];
    uint64_t tkey = mix64(g->seed * 0x2545f4914f6cdd1dull ^ mix64((uint64_t)ti + 1));
    if (t->type == SL_GGML_F32 || t->type == SL_GGML_F16 || t->type == SL_GGML_BF16) {
        for (uint64_t r = r0; r < r0 + nr; r++) {
            mk_rng rr = { mix64(tkey ^ (r * 0xd1b54a32d192ed03ull)) };
            for (uint64_t i = 0; i < t->ne[0]; i++) {
                float v = t->mean + t->sigma * rng_gauss_fast(&rr);
                if (t->type == SL_GGML_F32) { memcpy(dst, &v, 4); dst += 4; }
                else {
                    uint16_t h = t->type == SL_GGML_F16 ? sl_f32_to_f16(v) : sl_f32_to_bf16(v);
                    memcpy(dst, &h, 2); dst += 2;
                }
            }
        }
        return 0;
    }
    mk_pool *p = gen_pool(g, t->type);
    if (!p) return -1;
    uint64_t bpr = t->ne[0] / p->epb;                 /* blocks per row */
    for (uint64_t b = r0 * bpr, e = (r0 + nr) * bpr; b < e; b++) {
        uint64_t h = mix64(tkey ^ (b * 0x9e3779b97f4a7c15ull));
        uint32_t pi = (uint32_t)(h & (MK_POOL - 1));
        float f = t->sigma * (0.97f + 0.06f * (float)((h >> 32) & 0xfffff) * (1.0f / 1048576.0f));
        memcpy(dst, p->blocks + (size_t)pi * p->bpb, p->bpb);
        for (int k = 0; k < p->nsf; k++) {
            put_scale(dst, p->sf[k], sl_f32_to_f16(p->scale[pi * (uint32_t)p->nsf + (uint32_t)k] * f));
        }
        if (p->type == SL_GGML_MXFP4) dst[0] = e8m0_scaled(dst[0], f);
        dst += p->bpb;
    }
    return 0;
}

/* ---- vocabulary ------------------------------------------------------------ */

/* The vocab file's tokenizer.* keys; when the shape wants more tokens than the
 * file has (Gemma's 262144 from an SPM file), tokens, scores and types are
 * padded with "<unused_N>" entries of type UNUSED (5) and a score no merge
 * reaches, so the embedding and head have the real model's size. */
static int copy_vocab(sl_gguf_writer *w, const sl_gguf *vg, uint32_t n_file, uint32_t n_total)
{
    int rc = 0;
    for (int64_t i = 0; i < sl_gguf_n_kv(vg) && !rc; i++) {
        const char *k = sl_gguf_kv_key(vg, i);
        if (strncmp(k, "tokenizer.", 10)) continue;
        bool tok = !strcmp(k, "tokenizer.ggml.tokens"), sc = !strcmp(k, "tokenizer.ggml.scores"),
             ty = !strcmp(k, "tokenizer.ggml.token_type");
        if (n_total <= n_file || !(tok || sc || ty)) { rc = sl_gguf_writer_copy_kv(w, vg, i); continue; }
        uint32_t et; uint64_t n; const void *d;
        if (sl_gguf_kv_arr(vg, i, &et, &n, &d) || n != n_file) return -1;
        if (tok) {
            char **s = calloc(n_total, sizeof *s);
            if (!s) return -1;
            for (uint64_t j = 0; j < n_total && !rc; j++) {
                const char *t; uint64_t len;
                char b[32];   /* outlives the strdup below */
                if (j < n_file) rc = sl_gguf_arr_str(vg, i, j, &t, &len);
                else { snprintf(b, sizeof b, "<unused_%llu>", (unsigned long long)(j - n_file)); t = b; }
                if (!rc && !(s[j] = strdup(t))) rc = -1;
            }
            if (!rc) rc = sl_gguf_writer_set_arr_str(w, k, (const char *const *)s, n_total);
            for (uint64_t j = 0; j < n_total; j++) free(s[j]);
            free(s);
        } else {
            if ((sc && et != SL_GGUF_F32) || (ty && et != SL_GGUF_I32)) return -1;
            uint32_t *v = malloc((size_t)n_total * 4);
            if (!v) return -1;
            memcpy(v, d, (size_t)n_file * 4);
            float lo = -1e9f;
            int32_t unused = 5;
            for (uint32_t j = n_file; j < n_total; j++) memcpy(&v[j], sc ? (const void *)&lo : &unused, 4);
            rc = sl_gguf_writer_set_arr(w, k, et, v, n_total);
            free(v);
        }
    }
    return rc;
}


/* ---- CLI --------------------------------------------------------------------- */
static void usage(FILE *f)
{
    fprintf(f,
        "usage: sluice mkmodel --preset NAME [options] -o FILE\n"
        "Writes a GGUF of one of the architectures below with random weights (for benchmarks;\n"
        "the output is gibberish).\n"
        "  --preset NAME     a shape (layers, n_embd, n_ff, heads / kv heads, context); one with\n"
        "                    experts fixes its architecture:\n");
    for (size_t i = 0; i < sizeof mk_presets / sizeof mk_presets[0]; i++) {
        const mk_preset *p = &mk_presets[i];
        fprintf(f, "                    %-14s %-8s %u, %u, %u, %u/%u, %u", p->name, p->arch ? p->arch : "llama",
                p->n_layer, p->n_embd, p->n_ff, p->n_head, p->n_head_kv, p->n_ctx);
        if (p->n_expert) fprintf(f, "; experts %u/%u x %u", p->n_expert_used, p->n_expert, p->n_ff_exp);
        fprintf(f, ": %s\n", p->what);
    }
    fprintf(f, "  --arch A          the preset's by default, else llama (MoE ones only by preset):\n");
    for (size_t i = 0; i < sizeof mk_archs / sizeof mk_archs[0]; i++)
        fprintf(f, "                    %-9s %s\n", mk_archs[i].name, mk_archs[i].what);
    fprintf(f,
        "  --type T          f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k iq4_nl\n"
        "                    iq4_xs tq1_0 tq2_0 mxfp4 iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m:\n"
        "                    every matrix in T (lm head Q6_K for k-quants and i-quants, tq*,\n"
        "                    mxfp4, like llama.cpp); mixes:\n"
        "                    q4_k_m, q4_k_s, q2_k_mix (llama.cpp's Q4_K_M / Q4_K_S / Q2_K recipes:\n"
        "                    Q6_K lm head, some attn_v/ffn_down/attn_output at more bits);\n"
        "                    mxfp4_moe (MXFP4 experts, Q8_0 elsewhere). Default q4_k (gpt-oss: mxfp4_moe)\n"
        "  --head T          lm head type (overrides the above)\n"
        "  --seed S          default 1; the file is a pure function of the options\n"
        "  --vocab FILE|none tokenizer metadata source (default: the architecture's, else the\n"
        "                    preset's, under models/vocab); none: no tokenizer, --n-vocab rows\n"
        "  --n-layer N --n-embd N --n-ff N --n-head N --n-head-kv N --n-ctx N --n-vocab N\n"
        "                    override the preset's shape\n"
        "  --tied            no output.weight (lm head tied to token_embd)\n"
        "  --keep-cache      do not evict the written file from the page cache\n"
        "  -o FILE           output path\n"
        "  --split-max-size SIZE  (e.g. 50M, 2G: decimal, as llama.cpp's gguf-split) write a split\n"
        "                    model FILE-00001-of-0000N.gguf ... (FILE without .gguf) the way\n"
        "                    gguf-split --split-max-size does (the same bytes), file by file\n"
        "  --sparse          tensor data left as file holes (zeros, no disk used), metadata real:\n"
        "                    a shape for `info` and `plan` without its disk (its outputs are zeros)\n"
        "How the weights are made: per weight type a pool of %u blocks is quantized once by the\n"
        "reference quantizer from N(0,1) floats; every block of every tensor is a pool block\n"
        "chosen by a hash of (seed, tensor, block index) whose scale fields are multiplied by the\n"
        "tensor's sigma and a per-block factor in [0.97,1.03) from the same hash. So every block\n"
        "is a genuine quantization of scaled random data and every 4 KiB page is distinct.\n"
        "sigma: matrices 0.02, attn_q/k 1.28/sqrt(n_embd), output 8/sqrt(n_embd); norms 1+N(0,0.1) F32.\n",
        MK_POOL);
}

/* The DeepSeek-V3-style keys (glm4moe, deepseek2) as their converters write
 * them; with mla the latent attention's: the cache row [c, k_rope] is
 * key_length, c value_length. */
static int mk_v3_keys(sl_gguf_writer *w, const char *A, const mk_v3shape *p, bool mla)
{
    char key[128];
    int rc = 0;
#define KU(k, v) (snprintf(key, sizeof key, "%s.%s", A, k), sl_gguf_writer_set_u32(w, key, v))
#define KF(k, v) (snprintf(key, sizeof key, "%s.%s", A, k), sl_gguf_writer_set_f32(w, key, v))
    rc |= KU("leading_dense_block_count", p->n_lead);
    rc |= KU("expert_shared_count", p->n_shared);
    rc |= KU("expert_gating_func", p->gating);
    rc |= KU("expert_group_count", p->n_group);
    rc |= KU("expert_group_used_count", p->n_group_used);
    rc |= KF("expert_weights_scale", p->w_scale);
    snprintf(key, sizeof key, "%s.expert_weights_norm", A);
    rc |= sl_gguf_writer_set_bool(w, key, p->w_norm);
    if (p->nextn) rc |= KU("nextn_predict_layers", p->nextn);
    if (mla) {
        if (p->q_lora) rc |= KU("attention.q_lora_rank", p->q_lora);
        rc |= KU("attention.kv_lora_rank", p->kv_lora);
        rc |= KU("attention.key_length", p->kv_lora + p->n_rot);
        rc |= KU("attention.value_length", p->kv_lora);
        rc |= KU("attention.key_length_mla", p->k_mla);
        rc |= KU("attention.value_length_mla", p->v_mla);
    }
    if (p->yarn_factor > 0) {
        snprintf(key, sizeof key, "%s.rope.scaling.type", A);
        rc |= sl_gguf_writer_set_str(w, key, "yarn");
        rc |= KF("rope.scaling.factor", p->yarn_factor);
        rc |= KU("rope.scaling.original_context_length", p->yarn_orig_ctx);
        rc |= KF("rope.scaling.yarn_log_multiplier", p->yarn_log_mul);
    }
#undef KU
#undef KF
    return rc;
}

/* The Qwen3.5 keys (qwen35, qwen35moe, qwen3next) as their converters write them. */
static int mk_gdn_keys(sl_gguf_writer *w, const char *A, const mk_gdn_shape *p)
{
    char key[128];
    int rc = 0;
#define KU(k, v) (snprintf(key, sizeof key, "%s.%s", A, k), sl_gguf_writer_set_u32(w, key, v))
    rc |= KU("ssm.conv_kernel", p->conv);
    rc |= KU("ssm.state_size", p->state);
    rc |= KU("ssm.group_count", p->nk);
    rc |= KU("ssm.time_step_rank", p->nv);
    rc |= KU("ssm.inner_size", p->nv * p->state);
    rc |= KU("full_attention_interval", p->interval);
    if (p->nextn) rc |= KU("nextn_predict_layers", p->nextn);
#undef KU
    if (!p->sections[0]) return rc;   /* Qwen3-Next: plain NEOX rope */
    snprintf(key, sizeof key, "%s.rope.dimension_sections", A);
    return rc | sl_gguf_writer_set_arr(w, key, SL_GGUF_U32, p->sections, 4);
}

static const mk_preset *find_preset(const char *name)
{
    for (size_t i = 0; i < sizeof mk_presets / sizeof mk_presets[0]; i++)
        if (!strcmp(mk_presets[i].name, name)) return &mk_presets[i];
    return NULL;
}

static const mk_arch *find_arch(const char *name)
{
    for (size_t i = 0; i < sizeof mk_archs / sizeof mk_archs[0]; i++)
        if (!strcmp(mk_archs[i].name, name)) return &mk_archs[i];
    return NULL;
}

static const char *arg_val(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) { fprintf(stderr, "mkmodel: %s needs a value\n", argv[*i]); return NULL; }
    return argv[++*i];
}

static const mk_typedef *find_type(const char *s)
{
    for (size_t i = 0; i < sizeof mk_types / sizeof mk_types[0]; i++)
        if (!strcasecmp(mk_types[i].name, s)) return &mk_types[i];
    return NULL;
}

static int parse_u32(const char *s, uint32_t *out)
{
    char *e;
    unsigned long long v = strtoull(s, &e, 10);
    if (e == s || *e || v == 0 || v > 0x7fffffffu) return -1;
    *out = (uint32_t)v;
    return 0;
}

/* "50M" / "2G": decimal megabytes / gigabytes, the units gguf-split takes. */
static int parse_split_size(const char *s, uint64_t *out)
{
    char *e;
    unsigned long long v = strtoull(s, &e, 10);
    uint64_t unit = *e == 'M' ? 1000000ull : *e == 'G' ? 1000000000ull : 0;
    if (e == s || !unit || e[1] || v == 0 || v > UINT64_MAX / unit) return -1;
    *out = v * unit;
    return 0;
}

/* A written file's pages written back and dropped so it does not crowd the
 * page cache (posix_fadvise only; nothing system-wide). */
static void evict(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        fdatasync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
}

/* File s of a split: its split keys (file 0: after the model's, already
 * set), its tensors, the header written. */
static int shard_begin(sl_gguf_writer *w, const mk_model *m, const uint32_t *of, uint32_t s, uint32_t count)
{
    int rc = sl_gguf_writer_set_split_keys(w, s, count, m->n_tensors);
    for (int i = 0; i < m->n_tensors && !rc; i++)
        if (of[i] == s) rc = sl_gguf_writer_add_tensor(w, m->t[i].name, m->t[i].type, m->t[i].n_dims, m->t[i].ne);
    return rc;
}

int perf_mkmodel_main(int argc, char **argv)
{
    const char *preset = NULL, *arch = NULL, *tname = NULL, *hname = NULL, *vocab = NULL, *out = NULL;
    uint64_t seed = 1;
    uint32_t ov[7] = {0};   /* n_layer n_embd n_ff n_head n_head_kv n_ctx n_vocab overrides */
    static const char *ovn[7] = { "--n-layer", "--n-embd", "--n-ff", "--n-head", "--n-head-kv", "--n-ctx", "--n-vocab" };
    bool tied = false, keep_cache = false, arch_given = false, sparse = false;
    uint64_t split_max = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (!strcmp(a, "--tied")) { tied = true; continue; }
        if (!strcmp(a, "--keep-cache")) { keep_cache = true; continue; }
        if (!strcmp(a, "--sparse")) { sparse = true; continue; }
        if (!strcmp(a, "--split-max-size")) {
            if (!(v = arg_val(argc, argv, &i))) return 2;
            if (parse_split_size(v, &split_max)) { fprintf(stderr, "mkmodel: bad --split-max-size '%s' (e.g. 50M, 2G)\n", v); return 2; }
            continue;
        }
        int k;
        for (k = 0; k < 7; k++) if (!strcmp(a, ovn[k])) break;
        if (k < 7) {
            if (!(v = arg_val(argc, argv, &i))) return 2;
            if (parse_u32(v, &ov[k])) { fprintf(stderr, "mkmodel: bad %s '%s'\n", a, v); return 2; }
            continue;
        }
        if (!strcmp(a, "--preset") || !strcmp(a, "--arch") || !strcmp(a, "--type") || !strcmp(a, "--head") ||
            !strcmp(a, "--seed") || !strcmp(a, "--vocab") || !strcmp(a, "-o")) {
            if (!(v = arg_val(argc, argv, &i))) return 2;
            if (!strcmp(a, "--preset")) preset = v;
            else if (!strcmp(a, "--arch")) { arch = v; arch_given = true; }
            else if (!strcmp(a, "--type")) tname = v;
            else if (!strcmp(a, "--head")) hname = v;
            else if (!strcmp(a, "--vocab")) vocab = v;
            else if (!strcmp(a, "-o")) out = v;
            else {
                char *e;
                seed = strtoull(v, &e, 0);
                if (e == v || *e) { fprintf(stderr, "mkmodel: bad --seed '%s'\n", v); return 2; }
            }
            continue;
        }
        fprintf(stderr, "mkmodel: unknown argument '%s'\n", a);
        usage(stderr);
        return 2;
    }
    if (!preset || !out) { usage(stderr); return 2; }
    char split_prefix[4000], path[4096];
    if (split_max) {   /* files FILE-0000i-of-0000N.gguf, written one after the other */
        size_t ol = strlen(out);
        if (ol >= sizeof split_prefix) { fprintf(stderr, "mkmodel: -o path too long\n"); return 2; }
        snprintf(split_prefix, sizeof split_prefix, "%.*s", (int)(ol > 5 && !strcmp(out + ol - 5, ".gguf") ? ol - 5 : ol), out);
    }
    const mk_preset *ps = find_preset(preset);
    if (!ps) {
        fprintf(stderr, "mkmodel: unknown preset '%s' (sluice mkmodel --help lists them)\n", preset);
        return 2;
    }
    const bool moe = ps->n_expert > 0;
    if (moe && arch_given && strcmp(arch, ps->arch)) {
        fprintf(stderr, "mkmodel: preset '%s' is architecture %s (--arch %s)\n", preset, ps->arch, arch);
        return 2;
    }
    if (!arch || moe) arch = ps->arch ? ps->arch : "llama";
    const mk_arch *ar = find_arch(arch);
    if (!ar || (!moe && ar->moe_only)) {
        fprintf(stderr, "mkmodel: unknown --arch '%s' (sluice mkmodel --help lists them; MoE: by preset)\n", arch);
        return 2;
    }
    if (!tname) tname = ar->def_type ? ar->def_type : "q4_k";
    const mk_typedef *td = find_type(tname);
    if (!td) { fprintf(stderr, "mkmodel: unknown --type '%s'\n", tname); return 2; }
    uint32_t head_type = default_head(td->type);
    if (hname) {
        const mk_typedef *ht = find_type(hname);
        if (!ht || ht->mix != MIX_PLAIN) { fprintf(stderr, "mkmodel: bad --head '%s'\n", hname); return 2; }
        head_type = ht->type;
    }

    static mk_model m;   /* ~200 KB: off the stack; one mkmodel per process */
    memset(&m, 0, sizeof m);
    m.arch = ar;
    m.n_expert = ps->n_expert;
    m.n_expert_used = ps->n_expert_used;
    m.n_ff_exp = ps->n_ff_exp;
    for (size_t i = 0; ar->gemma4 && i < sizeof mk_gemma4_shapes / sizeof mk_gemma4_shapes[0]; i++) {
        const mk_gemma4_shape *gs = &mk_gemma4_shapes[i];
        if (strcmp(gs->preset, preset)) continue;
        m.head_dim_swa = gs->head_dim_swa; m.n_embd_ple = gs->n_embd_ple; m.n_kv_shared = gs->n_kv_shared;
        m.swa_period = gs->swa_period; m.n_ff_wide = gs->n_ff_wide; m.split_exps = gs->split_exps;
        m.n_head_kv_full = gs->n_head_kv_full; m.full_no_v = gs->full_no_v;
    }
    if (ar->gemma4 && !m.swa_period) {
        fprintf(stderr, "mkmodel: --arch gemma4 needs a gemma4 preset\n");
        return 2;
    }
    m.v3 = ar->v3moe ? find_v3shape(preset) : NULL;
    for (size_t i = 0; ar->gdn && i < sizeof mk_gdn_shapes / sizeof mk_gdn_shapes[0]; i++)
        if (!strcmp(mk_gdn_shapes[i].preset, preset)) m.gdn = &mk_gdn_shapes[i];
    if ((ar->v3moe && !m.v3) || (ar->gdn && !m.gdn)) {
        fprintf(stderr, "mkmodel: architecture %s needs a preset of its own (sluice mkmodel --help)\n", ar->name);
        return 2;
    }
    m.n_ff_shexp = m.v3 ? m.v3->n_shared * ps->n_ff_exp : ps->n_ff_shexp;
    m.n_layer = ov[0] ? ov[0] : ps->n_layer;
    m.n_embd = ov[1] ? ov[1] : ps->n_embd;
    m.n_ff = ov[2] ? ov[2] : ps->n_ff;
    m.n_head = ov[3] ? ov[3] : ps->n_head;
    m.n_head_kv = ov[4] ? ov[4] : (ov[3] ? m.n_head : ps->n_head_kv);
    m.n_ctx = ov[5] ? ov[5] : ps->n_ctx;
    m.rope_base = ar->rope_base > 0 ? ar->rope_base : ps->rope_base;
    m.eps = ar->eps;
    m.tied = tied || ar->tied;
    /* the preset's head dim only while its heads are kept */
    m.head_dim = ps->head_dim && !ov[1] && !ov[3] ? ps->head_dim : m.n_embd / m.n_head;
    m.rope_orig_ctx = ar->fused ? ps->rope_orig_ctx : 0;
    const bool own_head_dim = ps->head_dim && !ov[1] && !ov[3];   /* GLM-4.5-Air: 96 heads of 128 over 4096 */
    if ((!own_head_dim && m.n_embd % m.n_head) || m.n_head % m.n_head_kv || m.head_dim % 2) {
        fprintf(stderr, "mkmodel: n_embd %u, n_head %u, n_head_kv %u do not divide into heads\n",
                m.n_embd, m.n_head, m.n_head_kv);
        return 2;
    }

    /* Tokenizer source. */
    char vpath[4096];
    if (!vocab) {
        snprintf(vpath, sizeof vpath, "%s/models/vocab/%s", SL_SHARED_DIR, ar->vocab ? ar->vocab : ps->vocab);
        vocab = vpath;
    }
    sl_gguf *vg = NULL;
    if (strcmp(vocab, "none")) {
        int rc = sl_gguf_open_path(&vg, vocab);
        if (rc) { fprintf(stderr, "mkmodel: vocab %s: %s\n", vocab, sl_gguf_errmsg(NULL)); return 1; }
        uint32_t et; uint64_t n; const void *d;
        if (sl_gguf_get_arr(vg, "tokenizer.ggml.tokens", &et, &n, &d) || n == 0 || n > 0x7fffffff) {
            fprintf(stderr, "mkmodel: vocab %s has no tokenizer.ggml.tokens array\n", vocab);
            sl_gguf_close(vg);
            return 1;
        }
        uint32_t want = ov[6] ? ov[6] : ps->n_vocab;
        if (want && want < n)
            fprintf(stderr, "mkmodel: note: --n-vocab %u ignored: the vocab file has %llu tokens\n", want,
                    (unsigned long long)n);
        m.n_vocab_file = (uint32_t)n;
        m.n_vocab = want > n ? want : (uint32_t)n;   /* more: padded with <unused_N> tokens */
    } else {
        m.n_vocab = ov[6] ? ov[6] : ps->n_vocab ? ps->n_vocab : 32000;
    }

    if (build_model(&m, td, head_type)) {
        fprintf(stderr, "mkmodel: shape not representable in %s (row lengths must be multiples of the block)\n",
                td->name);
        if (vg) sl_gguf_close(vg);
        return 2;
    }

    /* the file of each tensor (all 0 unsplit) */
    static uint32_t of[MK_MAX_TENSORS];
    uint32_t n_files = 1;
    memset(of, 0, sizeof of);
    if (split_max) {
        static uint64_t nb[MK_MAX_TENSORS];
        static const char *names[MK_MAX_TENSORS];
        for (int i = 0; i < m.n_tensors; i++) nb[i] = m.t[i].nbytes, names[i] = m.t[i].name;
        n_files = sl_gguf_split_assign(preset, m.n_tensors, nb, names, split_max, of);
        if (!n_files) {
            fprintf(stderr, "mkmodel: split: %s\n", sl_last_error());
            if (vg) sl_gguf_close(vg);
            return 2;
        }
        sl_gguf_split_path(path, sizeof path, split_prefix, 0, n_files);
        out = path;
    }
    sl_gguf_writer *w = NULL;
    int rc = sl_gguf_writer_open(&w, out, 3);
    if (rc) {
        fprintf(stderr, "mkmodel: %s: %s\n", out, sl_last_error());
        if (vg) sl_gguf_close(vg);
        return 1;
    }
    char key[128], gname[128];
    const char *A = ar->name;
    snprintf(gname, sizeof gname, "sluice-synth-%s-%s%s%s", preset, ar->name_tag,
             td->name, tied ? "-tied" : "");
#define KEY(fmt) (snprintf(key, sizeof key, fmt, A), key)
    rc |= sl_gguf_writer_set_str(w, "general.architecture", A);
    rc |= sl_gguf_writer_set_str(w, "general.name", gname);
    rc |= sl_gguf_writer_set_u32(w, "general.file_type", td->ftype);
    rc |= sl_gguf_writer_set_u32(w, "general.quantization_version", 2);
    rc |= sl_gguf_writer_set_u32(w, KEY("%s.vocab_size"), m.n_vocab);
    rc |= sl_gguf_writer_set_u32(w, KEY("%s.context_length"), m.n_ctx);
    rc |= sl_gguf_writer_set_u32(w, KEY("%s.embedding_length"), m.n_embd);
    rc |= sl_gguf_writer_set_u32(w, KEY("%s.block_count"), m.n_layer + mk_n_nextn(&m));
    if (ar->gemma4) rc |= gemma4_keys(w, &m);   /* its feed_forward_length is per layer */
    else rc |= sl_gguf_writer_set_u32(w, KEY("%s.feed_forward_length"), m.n_ff);
    /* Qwen3.5's rope dims while the heads hold them (--n-embd / --n-head may narrow them) */
    const uint32_t n_rot = m.v3 && m.v3->n_rot ? m.v3->n_rot
                         : m.gdn && m.gdn->n_rot <= m.head_dim ? m.gdn->n_rot : m.head_dim;
    rc |= sl_gguf_writer_set_u32(w, KEY("%s.rope.dimension_count"), n_rot);
    if (m.v3) rc |= mk_v3_keys(w, A, m.v3, ar->mla);
    if (m.gdn) rc |= mk_gdn_keys(w, A, m.gdn);
    if (!ar->mla && m.head_dim != m.n_embd / m.n_head) {
        rc |= sl_gguf_writer_set_u32(w, KEY("%s.attention.key_length"), m.head_dim);
        rc |= sl_gguf_writer_set_u32(w, KEY("%s.attention.value_length"), m.head_dim);
    }
    if (m.rope_orig_ctx) {
        /* the converter's attention factor for the context ratio */
        double ratio = (double)m.n_ctx / m.rope_orig_ctx;
        float af = ratio > 1 ? (float)sqrt(1 + log(ratio) / log((double)m.rope_orig_ctx)) : 1.0f;
        rc |= sl_gguf_writer_set_u32(w, KEY("%s.rope.scaling.original_context_length"), m.rope_orig_ctx);
        rc |= sl_gguf_writer_set_f32(w, KEY("%s.rope.scaling.attn_factor"), af);
    }
    if (ar->window)   /* pattern and local rope base: the family's defaults */
        rc |= sl_gguf_writer_set_u32(w, KEY("%s.attention.sliding_window"),
                                     m.n_ctx <= 512 ? 16u : ar->swa ? ar->swa : MK_WINDOW);
    if (ar->yarn_factor > 0) {
        rc |= sl_gguf_writer_set_str(w, KEY("%s.rope.scaling.type"), "yarn");
        rc |= sl_gguf_writer_set_f32(w, KEY("%s.rope.scaling.factor"), ar->yarn_factor);
        rc |= sl_gguf_writer_set_u32(w, KEY("%s.rope.scaling.original_context_length"), ar->yarn_orig_ctx);
    }
    if (m.n_expert) {
        rc |= sl_gguf_writer_set_u32(w, KEY("%s.expert_count"), m.n_expert);
        rc |= sl_gguf_writer_set_u32(w, KEY("%s.expert_used_count"), m.n_expert_used);
        if (ar->expert_width_key)
            rc |= sl_gguf_writer_set_u32(w, KEY("%s.expert_feed_forward_length"), m.n_ff_exp);
        if (m.n_ff_shexp && !ar->v3moe)
            rc |= sl_gguf_writer_set_u32(w, KEY("%s.expert_shared_feed_forward_length"), m.n_ff_shexp);
    }
    rc |= sl_gguf_writer_set_u32(w, KEY("%s.attention.head_count"), m.n_head);
    if (!m.n_head_kv_full) rc |= sl_gguf_writer_set_u32(w, KEY("%s.attention.head_count_kv"), m.n_head_kv);
    rc |= sl_gguf_writer_set_f32(w, KEY("%s.rope.freq_base"), m.rope_base);
    rc |= sl_gguf_writer_set_f32(w, KEY("%s.attention.layer_norm_rms_epsilon"), m.eps);
#undef KEY
    rc |= sl_gguf_writer_set_u64(w, "sluice.synth.seed", seed);
    rc |= sl_gguf_writer_set_str(w, "sluice.synth.preset", preset);
    if (vg) rc |= copy_vocab(w, vg, m.n_vocab_file, m.n_vocab);
    uint64_t total = 0;
    for (int i = 0; i < m.n_tensors; i++) total += m.t[i].nbytes;
    if (split_max) rc |= shard_begin(w, &m, of, 0, n_files);
    else
        for (int i = 0; i < m.n_tensors && !rc; i++)
            rc = sl_gguf_writer_add_tensor(w, m.t[i].name, m.t[i].type, m.t[i].n_dims, m.t[i].ne);
    if (vg) sl_gguf_close(vg);
    if (!rc) rc = sl_gguf_writer_begin_data(w);
    if (rc) {
        fprintf(stderr, "mkmodel: %s: %s\n", out, sl_gguf_writer_errmsg(w));
        sl_gguf_writer_abort(w);
        return 1;
    }

    fprintf(stderr, "mkmodel: %s %s %s: %u layers, n_embd %u, n_ff %u, heads %u/%u, vocab %u, %.2f GB of weights\n",
            preset, A, td->name, m.n_layer, m.n_embd, m.n_ff, m.n_head, m.n_head_kv, m.n_vocab, total / 1e9);
    mk_gen *g = calloc(1, sizeof *g);
    uint8_t *buf = malloc(MK_BUF);
    if (!g || !buf) {
        fprintf(stderr, "mkmodel: out of memory\n");
        free(g); free(buf);
        sl_gguf_writer_abort(w);
        return 1;
    }
    g->seed = seed;
    double t0 = perf_now();
    uint64_t done = 0;
    sl_cli_progress pg;
    sl_cli_progress_begin(&pg, "mkmodel: writing", total, true);
    uint32_t file = 0;
    for (int ti = 0; ti < m.n_tensors && !rc; ti++) {
        const mk_tensor *t = &m.t[ti];
        if (of[ti] != file) {   /* the next file of the split */
            if ((rc = sl_gguf_writer_close(w))) { w = NULL; fprintf(stderr, "mkmodel: %s: %s\n", out, sl_last_error()); break; }
            if (!keep_cache) evict(out);
            fprintf(stderr, "mkmodel: split file %s\n", out);
            sl_gguf_split_path(path, sizeof path, split_prefix, ++file, n_files);
            if ((rc = sl_gguf_writer_open(&w, out, 3)) || (rc = shard_begin(w, &m, of, file, n_files)) ||
                (rc = sl_gguf_writer_begin_data(w))) {
                fprintf(stderr, "mkmodel: %s: %s\n", out, sl_last_error());
                if (w) sl_gguf_writer_abort(w);
                w = NULL;
                break;
            }
        }
        if (sparse) {   /* a hole of the tensor's size */
            if ((rc = sl_gguf_writer_skip(w, t->nbytes))) fprintf(stderr, "mkmodel: %s: %s\n", out, sl_gguf_writer_errmsg(w));
            done += t->nbytes;
            continue;
        }
        uint64_t rows = t->ne[1] * t->ne[2], row_bytes = t->nbytes / rows;
        uint64_t per = MK_BUF / row_bytes;
        if (per == 0) { rc = -1; fprintf(stderr, "mkmodel: row of %s too large\n", t->name); break; }
        for (uint64_t r = 0; r < rows && !rc; r += per) {
            uint64_t nr = rows - r < per ? rows - r : per;
            if (gen_rows(g, &m, ti, r, nr, buf)) {
                fprintf(stderr, "mkmodel: cannot quantize type %u (%s)\n", t->type, t->name);
                rc = -1;
                break;
            }
            rc = sl_gguf_writer_write(w, buf, nr * row_bytes);
            if (rc) { fprintf(stderr, "mkmodel: %s: %s\n", out, sl_gguf_writer_errmsg(w)); break; }
            done += nr * row_bytes;
            sl_cli_progress_update(&pg, done);
        }
    }
    for (uint32_t k = 0; k < SL_GGML_TYPE_COUNT; k++) if (g->have[k]) pool_free(&g->pools[k]);
    free(g);
    free(buf);
    sl_cli_progress_end(&pg);
    if (rc) {   /* the files of a split already complete are removed with this one */
        if (w) sl_gguf_writer_abort(w);
        for (uint32_t i = 0; i < file; i++) {
            sl_gguf_split_path(path, sizeof path, split_prefix, i, n_files);
            unlink(path);
        }
        return 1;
    }
    rc = sl_gguf_writer_close(w);
    if (rc) { fprintf(stderr, "mkmodel: %s: %s\n", out, sl_last_error()); return 1; }
    double tw = perf_now() - t0;
    if (!keep_cache) evict(out);
    if (split_max) fprintf(stderr, "mkmodel: split file %s\n", out);
    fprintf(stderr, "mkmodel: wrote %s: %.2f GB%s in %.1f s (%.0f MB/s)%s\n", out, done / 1e9,
            sparse ? " (sparse: holes, no data)" : "", tw, done / 1e6 / (tw > 0 ? tw : 1),
            keep_cache ? "" : ", flushed and evicted from the page cache");
    return 0;
}

SL_CLI_COMMAND(sl_cmd_mkmodel, "mkmodel", "write a random-weight GGUF of any architecture, shape and quantization",
               perf_mkmodel_main)
