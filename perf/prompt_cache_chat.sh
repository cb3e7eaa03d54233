#!/bin/sh
# A multi-turn conversation replayed the stateless way (every turn one `sluice
# run` whose prompt is the whole transcript so far), each turn run twice:
# without a cache and with --prompt-cache (the file carries the previous turn's
# prompt and reply). Prints per turn the prompt tokens, the positions restored
# and the prompt time (restore included) of both, then the totals.
#   perf/prompt_cache_chat.sh MODEL [TURNS] [N_REPLY] [SLUICE]   (defaults 8, 24)
set -eu
MODEL=${1:?usage: perf/prompt_cache_chat.sh MODEL [TURNS] [N_REPLY] [SLUICE]}
TURNS=${2:-8}; NR=${3:-24}; SLUICE=${4:-build/sluice}
TMP=${TMPDIR:-/tmp}/sl_pc_chat.$$
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
COMMON="-m $MODEL -c 4096 -t 2 -n $NR --temp 0 --ignore-eos --no-display-prompt --json"
js() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" "$1" | tail -n1; }
H="System: you are a patient guide who answers questions about rivers, boats and weather."
k=1; ta=0; tb=0; ntok=0; nre=0
while [ $k -le "$TURNS" ]; do
    H="$H
User: question $k: how do boats on river number $((k * 7)) cope when the water rises by $((k * 3)) metres over a night of rain, and what should a keeper of the lock do first?
Assistant:"
    "$SLUICE" run $COMMON -p "$H" >"$TMP/a.out" 2>"$TMP/a.err"
    "$SLUICE" run $COMMON -p "$H" --prompt-cache "$TMP/cache" >"$TMP/b.out" 2>"$TMP/b.err"
    np=$(js "$TMP/a.err" n_prompt); pa=$(js "$TMP/a.err" prompt_ms)
    pb=$(js "$TMP/b.err" prompt_ms); rb=$(js "$TMP/b.err" restore_ms); nr=$(js "$TMP/b.err" n_restored)
    cmp -s "$TMP/a.out" "$TMP/b.out" && same=same || same=DIFFERENT
    echo "turn $k: prompt $np tokens; no cache ${pa} ms; cache: $nr restored, ${pb} ms + restore ${rb} ms; reply $same"
    ta=$(echo "$ta + $pa" | bc); tb=$(echo "$tb + $pb + $rb" | bc)
    ntok=$((ntok + np)); nre=$((nre + nr))
    H="$H$(cat "$TMP/a.out")"
    k=$((k + 1))
done
echo "total: $ntok prompt tokens over $TURNS turns, $nre restored from the cache;"
echo "prompt time without cache $ta ms, with cache $tb ms (restore included): saved $(echo "$ta - $tb" | bc) ms, ratio $(echo "scale=2; $ta / $tb" | bc)x"
