#!/bin/sh
# Time to first token of a ~1000-token prompt computed vs restored from
# --prompt-cache (engine/session_state.c), alternating A/B, medians.
#   perf/prompt_cache.sh MODEL [MODE] [REPS] [SLUICE]
#   MODE: resident | stream | mmap (default resident); REPS: default 3.
# The cache file is written once, then every B run restores it read-only
# (--prompt-cache-ro): 999 of the 1000 positions come from the file, the last
# one is computed (its logits must be fresh). Prints one line per run and the
# medians; the file size is printed too (KV bytes dominate it).
set -eu
MODEL=${1:?usage: perf/prompt_cache.sh MODEL [MODE] [REPS] [SLUICE]}
MODE=${2:-resident}
REPS=${3:-3}
SLUICE=${4:-build/sluice}
TMP=${TMPDIR:-/tmp}/sl_pc_bench.$$
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
# ~1000 tokens of varied text (numbers keep the BPE from collapsing repeats)
i=0; P=""
while [ $i -lt 63 ]; do P="$P Step $i of the plan: the river rises, $((i * 37 % 101)) boats wait."; i=$((i + 1)); done
NT=$("$SLUICE" tokenize -m "$MODEL" -p "$P" 2>/dev/null | wc -w)
echo "prompt: $NT tokens, mode $MODE, $REPS reps"
COMMON="-m $MODEL --mode $MODE -c 1100 -t 2 -n 1 --temp 0 --no-display-prompt --json"
ttft() { sed -n 's/.*"ttft_ms":\([0-9.]*\).*/\1/p' "$1" | tail -n1; }
"$SLUICE" run $COMMON -p "$P" --prompt-cache "$TMP/cache" >/dev/null 2>"$TMP/w.log"
echo "cache file: $(stat -c %s "$TMP/cache") bytes"
r=0
while [ $r -lt "$REPS" ]; do
    "$SLUICE" run $COMMON -p "$P" >/dev/null 2>"$TMP/a.log"
    "$SLUICE" run $COMMON -p "$P" --prompt-cache "$TMP/cache" --prompt-cache-ro >/dev/null 2>"$TMP/b.log"
    a=$(ttft "$TMP/a.log"); b=$(ttft "$TMP/b.log")
    grep -q "reused $((NT - 1)) of $NT" "$TMP/b.log" || { echo "cache not reused:"; cat "$TMP/b.log"; exit 1; }
    echo "rep $r: ttft no cache $a ms, with cache $b ms"
    echo "$a" >>"$TMP/A"; echo "$b" >>"$TMP/B"
    r=$((r + 1))
done
ma=$(sort -g "$TMP/A" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
mb=$(sort -g "$TMP/B" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
echo "median ttft: no cache $ma ms, with cache $mb ms, ratio $(awk "BEGIN {printf \"%.1f\", $ma / $mb}")x"
