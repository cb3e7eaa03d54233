#!/bin/sh
# The i-quant headline (#18): a Llama-3.3-70B-shaped IQ2_XS file streamed with
# FREE (default 1.4G, TrueLarge's 4 GB phone) of free memory, in one run:
#   1. Sluice `bench --mode stream --free FREE`: prompt and decode ms/token,
#      peak RSS, and the in-run disk bound (bytes read per token / the O_DIRECT
#      bandwidth bench measures first);
#   2. llama.cpp (an existing build, mmap, its default) under build/balloon
#      --leave FREE: very few tokens, it re-reads the file through the page
#      cache every token; its peak RSS from /usr/bin/time.
# Both start with the file evicted (posix_fadvise DONTNEED via dd iflag=nocache).
# Creates the model with `sluice mkmodel --preset 70b --type iq2_xs` if absent.
# Uses build/balloon: run it under the memory lock,
#   flock /work/notes/mem.lock perf/iq_70b.sh
# env: MODEL, FREE (1.4G), THREADS (2), P/N (sluice prompt/decode tokens, 8/4),
#      REPS (2), LP/LN (llama.cpp prompt/decode tokens, 4/1),
#      LLAMA_CPP_BIN (/work/llama/build/bin), LTIMEOUT (s, 600), BUILD (build)
set -eu
BUILD=${BUILD:-build}
MODEL=${MODEL:-$HOME/.cache/sluice/models/synth-70b-iq2_xs.gguf}
FREE=${FREE:-1.4G}
THREADS=${THREADS:-2}
P=${P:-8}; N=${N:-4}; REPS=${REPS:-2}
LP=${LP:-4}; LN=${LN:-1}
LLAMA_CPP_BIN=${LLAMA_CPP_BIN:-/work/llama/build/bin}
LTIMEOUT=${LTIMEOUT:-600}
[ -x "$BUILD/sluice" ] && [ -x "$BUILD/balloon" ] || { echo "run make first" >&2; exit 2; }
if [ ! -f "$MODEL" ]; then
    mkdir -p "$(dirname "$MODEL")"
    "$BUILD/sluice" mkmodel --preset 70b --type iq2_xs -o "$MODEL"
fi
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
evict() { dd if="$1" iflag=nocache count=0 status=none; }

echo "# 70B IQ2_XS with $FREE free: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $THREADS threads"
echo
echo "model: \`$MODEL\` ($(stat -c %s "$MODEL") bytes)"
echo

# 1. Sluice
evict "$MODEL"
echo "## Sluice: \`$BUILD/sluice bench -m MODEL --mode stream --free $FREE -t $THREADS -p $P -n $N -r $REPS -o md\`"
echo
"$BUILD/sluice" bench -m "$MODEL" --mode stream --free "$FREE" -t "$THREADS" -p "$P" -n "$N" -r "$REPS" \
    -o md > "$TMP/sluice.md" 2> "$TMP/sluice.err" || { tail -20 "$TMP/sluice.err" >&2; exit 1; }
echo '```'
grep 'ms/token' "$TMP/sluice.err" | tr '\r' '\n' | grep 'rep ' || true
echo '```'
cat "$TMP/sluice.md"
echo

# 2. llama.cpp, mmap, same free memory: decode (tg LN) and prompt (pp LP) as
#    two invocations, each stopped after LTIMEOUT/2 s (then the ratio is a
#    lower bound: the timeout over Sluice's time)
llama() {   # llama NAME ARGS...
    name=$1; shift
    evict "$MODEL"
    echo "### llama.cpp $name: \`balloon --leave $FREE -- llama-bench -m MODEL -t $THREADS $* -r 1 --no-warmup -o csv\` (mmap)"
    echo
    rc=0
    "$BUILD/balloon" -q --leave "$FREE" -- /usr/bin/time -v -o "$TMP/llama.time" timeout $((LTIMEOUT / 2)) \
        "$LLAMA_CPP_BIN/llama-bench" -m "$MODEL" -t "$THREADS" "$@" -r 1 --no-warmup -o csv \
        > "$TMP/llama.csv" 2> "$TMP/llama.err" || rc=$?
    echo '```'
    cat "$TMP/llama.csv"
    grep -E 'Maximum resident|Elapsed|Major' "$TMP/llama.time" || true
    [ "$rc" = 0 ] || echo "llama-bench exit status $rc (124: stopped by the $((LTIMEOUT / 2)) s timeout)"
    echo '```'
    echo
}
echo "## llama.cpp 2026-08 ($LLAMA_CPP_BIN), same free memory"
echo
llama decode -p 0 -n "$LN"
llama prompt -p "$LP" -n 0
