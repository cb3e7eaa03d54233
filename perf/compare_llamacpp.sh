#!/bin/sh
# Side-by-side: llama.cpp (an EXISTING build; this script never fetches or
# builds it) and Sluice on the same GGUF, same threads, same free memory.
# Free memory is simulated with build/balloon for both (no cgroups).
#
#   LLAMA_CPP_BIN=/path/to/llama.cpp/build/bin perf/compare_llamacpp.sh MODEL [FREE_LIST]
#   env: THREADS (default nproc), P (prompt, 32), N (generated, 16), REPS (2), BUILD (build)
set -eu
if [ -z "${LLAMA_CPP_BIN:-}" ] || [ ! -x "$LLAMA_CPP_BIN/llama-bench" ]; then
    echo "compare_llamacpp.sh: set LLAMA_CPP_BIN to a llama.cpp build dir containing llama-bench" >&2
    echo "  (this script only runs an existing build; it does not fetch or build llama.cpp)" >&2
    exit 2
fi
[ $# -ge 1 ] || { echo "usage: LLAMA_CPP_BIN=DIR $0 MODEL [FREE_LIST, e.g. 2.5G,6G]" >&2; exit 2; }
MODEL=$1
FREE=${2:-2.5G}
BUILD=${BUILD:-build}
THREADS=${THREADS:-$(nproc)}
P=${P:-32}; N=${N:-16}; REPS=${REPS:-2}
[ -f "$MODEL" ] || { echo "no such model: $MODEL" >&2; exit 2; }
[ -x "$BUILD/sluice" ] && [ -x "$BUILD/balloon" ] || { echo "run make first" >&2; exit 2; }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

# pick columns of a CSV by header name: csv_col FILE NAME...
csv_cols() {
    f=$1; shift
    awk -F, -v want="$*" 'NR==1 { n=split(want, w, " "); for (i=1;i<=NF;i++) { gsub(/"/,"",$i); idx[$i]=i }; next }
        { gsub(/"/,""); line=""; for (k=1;k<=n;k++) line=line (k>1?" ":"") $(idx[w[k]]); print line }' "$f"
}

printf '| free | llama.cpp pp t/s | sluice pp t/s | llama.cpp tg t/s | sluice tg t/s | sluice/llama.cpp tg |\n'
printf '|---:|---:|---:|---:|---:|---:|\n'
for F in $(echo "$FREE" | tr ',' ' '); do
    "$BUILD/balloon" -q --leave "$F" -- "$LLAMA_CPP_BIN/llama-bench" -m "$MODEL" -t "$THREADS" \
        -p "$P" -n "$N" -r "$REPS" -o csv > "$TMP/llama.csv" 2> "$TMP/llama.err" || {
        echo "llama-bench failed at free=$F:" >&2; tail -5 "$TMP/llama.err" >&2; continue; }
    "$BUILD/sluice" bench -m "$MODEL" --free "$F" -t "$THREADS" -p "$P" -n "$N" -r "$REPS" \
        -o csv > "$TMP/sluice.csv" 2> "$TMP/sluice.err" || true
    lpp=$(csv_cols "$TMP/llama.csv" n_prompt n_gen avg_ts | awk -v p="$P" '$1==p && $2==0 {print $3}')
    ltg=$(csv_cols "$TMP/llama.csv" n_prompt n_gen avg_ts | awk -v n="$N" '$1==0 && $2==n {print $3}')
    set -- $(csv_cols "$TMP/sluice.csv" prompt_tps decode_tps compute_included | head -1)
    spp=${1:-?}; stg=${2:-?}; comp=${3:-0}
    ratio=$(awk -v a="$stg" -v b="$ltg" 'BEGIN { if (b+0 > 0 && a+0 > 0) printf "%.2fx", a/b; else print "-" }')
    printf '| %s | %s | %s | %s | %s%s | %s |\n' "$F" "${lpp:-?}" "$spp" "${ltg:-?}" "$stg" \
        "$( [ "$comp" = 1 ] || echo ' (weights only)')" "$ratio"
done
echo
echo "same file, $THREADS threads, pp $P / tg $N tokens, $REPS reps; free memory held by $BUILD/balloon."
