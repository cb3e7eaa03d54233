/* The unit map (stream_units.c): the file cut into units (layers, then
 * lm-head chunks), each unit's file ranges widened to the read alignment and
 * its tensors, and the routed experts of an MoE file. */
#ifndef SL_STREAM_UNITS_H
#define SL_STREAM_UNITS_H

#include "sluice_stream.h"
#include "../gguf/gguf.h"

#include <stdbool.h>
#include <stdint.h>

/* A dense unit of an MoE layer whose routed experts are split off may be
 * several file ranges (the experts sit between its tensors), packed one after
 * the other into its buffer. Three expert tensors cut a layer into at most 4. */
#define SL_MAX_SEGS 4
typedef struct sl_seg {
    uint64_t begin, end;     /* exact file range */
    uint64_t abeg, aend;     /* widened to the alignment */
    uint64_t buf_off;        /* where abeg lands in the unit's buffer */
} sl_seg;

typedef struct sl_unit {
    sl_stream_unit info;
    uint64_t begin, end;     /* exact file range of the unit's tensors (first to last segment) */
    uint64_t abeg, aend;     /* widened to the alignment (aend may pass EOF) */
    int n_seg;               /* 1, except split MoE layers */
    sl_seg seg[SL_MAX_SEGS];
    uint32_t n_tensors;
    sl_stream_tensor *tensors;
    uint64_t *tofs;          /* file offset of each tensor */
    uint8_t *pinned_buf;     /* pinned: data of abeg.. */
    bool *rows8;             /* [n_tensors] packed when pinned (stream_rows8.c), or NULL */
    int slot;                /* stream: slot holding it, -1 */
    bool acquired;
    bool unused;             /* outside the config's layer subset: never read nor acquired */
} sl_unit;

/* The routed experts of an MoE file: per layer its gate/up/down 3-D tensors
 * ([n_in, n_out, n_expert]); expert e is the e-th slice of each. */
typedef struct sl_unit_moe {
    int32_t n_expert, n_expert_used;
    const sl_gguf_tensor *(*exps)[3];   /* [n_layers][gate, up, down] */
    bool split;                     /* the layer units leave them out */
    uint64_t part_cap[3];           /* a slot's room for each part (aligned, largest layer) */
    uint64_t slot_bytes;            /* one expert slot: the three parts */
    uint64_t expert_bytes;          /* all experts of all layers (exact) */
    uint64_t slice_bytes_sum;       /* one expert of every layer (exact): per-token figures */
} sl_unit_moe;

/* The file cut into units (layers, then lm-head chunks) and the facts the
 * planner counts. */
typedef struct sl_unit_map {
    sl_unit *units; int32_t n_units, n_layers, n_head_chunks;
    const sl_gguf_tensor *head;     /* lm head tensor (output.weight or tied token_embd) */
    const sl_gguf_tensor *embd;     /* token_embd or NULL */
    uint64_t embd_row_bytes;        /* one row of embd (0 without) */
    /* per_layer_token_embd (gemma4) or NULL: like embd, never a global; its
     * rows are read on demand */
    const sl_gguf_tensor *ple;
    uint64_t ple_row_bytes;
    uint64_t globals_bytes;         /* non-layer tensors except head, embd and ple */
    uint64_t meta_bytes;            /* header + metadata (what the reader keeps) */
    uint64_t max_unit_span;         /* largest widened unit (bytes of its buffer) */
    sl_unit_moe moe;                /* routed experts (n_expert 0: none) */
} sl_unit_map;

/* split_experts (stream mode's layout): for an MoE file, leave the 3-D
 * expert tensors out of the layer units (they become (layer, expert) units
 * of the expert cache); for a split model, cut layers at its files' bounds.
 * Either way a layer unit is packed segments. */
int sl_unit_map_init(sl_unit_map *um, const sl_gguf *g, uint32_t align, bool split_experts);
/* File range of part p (0 gate, 1 up, 2 down) of expert e in layer l. */
void sl_unit_map_expert_range(const sl_unit_map *um, int32_t l, int32_t e, int p, uint64_t *off,
                              uint64_t *len);
void sl_unit_map_free(sl_unit_map *um);

/* Where tensor i of un lies in a buffer holding the unit: segment k's abeg at
 * seg[k].buf_off (one segment: file offset abeg at base). */
const uint8_t *sl_unit_tensor_at(const sl_unit *un, uint32_t i, const uint8_t *base);
/* Marks the units outside c's layer subset (layer_mask, skip_head) unused; their
 * experts leave the per-token sum (slice_bytes_sum). */
void sl_unit_map_keep(sl_unit_map *um, const sl_stream_config *c);

#endif
