#!/bin/sh
# Resident speed, Sluice vs llama.cpp (an EXISTING build; never fetched or
# built here) on the same GGUF files, same threads, the model in RAM for both
# (llama.cpp: mmap of a page-cached file; Sluice: --mode resident). Runs
# alternate (llama.cpp, Sluice, llama.cpp, ...) so drift on a shared machine
# hits both; each figure is the median of ROUNDS runs.
#
#   LLAMA_CPP_BIN=/path/to/llama.cpp/build/bin perf/compare_resident.sh MODEL...
#   env: THREADS (2), P (prompt tokens, 64), N (generated, 32), ROUNDS (5), BUILD (build),
#        LLAMA_CPP_NAME (which build it is, for the table's footer),
#        LLAMA_MMAP (1; 0 = llama-bench -mmp 0: weights read into llama.cpp's own
#        buffers, for a model that fits in RAM once but not twice, e.g. 18 GB in 24 GiB:
#        Sluice's resident copy would evict llama.cpp's page cache between rounds)
set -eu
if [ -z "${LLAMA_CPP_BIN:-}" ] || [ ! -x "$LLAMA_CPP_BIN/llama-bench" ]; then
    echo "compare_resident.sh: set LLAMA_CPP_BIN to a llama.cpp build dir containing llama-bench" >&2
    exit 2
fi
[ $# -ge 1 ] || { echo "usage: LLAMA_CPP_BIN=DIR $0 MODEL..." >&2; exit 2; }
BUILD=${BUILD:-build}
THREADS=${THREADS:-2}
P=${P:-64}; N=${N:-32}; ROUNDS=${ROUNDS:-5}; LLAMA_MMAP=${LLAMA_MMAP:-1}
[ -x "$BUILD/sluice" ] || { echo "run make first" >&2; exit 2; }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

csv_cols() {   # csv_cols FILE NAME...: the named columns of a CSV
    f=$1; shift
    awk -F, -v want="$*" 'NR==1 { n=split(want, w, " "); for (i=1;i<=NF;i++) { gsub(/"/,"",$i); idx[$i]=i }; next }
        { gsub(/"/,""); line=""; for (k=1;k<=n;k++) line=line (k>1?" ":"") $(idx[w[k]]); print line }' "$f"
}
median() { sort -g | awk '{ v[NR]=$1 } END { if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2); else print "?" }'; }

printf '| model | llama.cpp pp%s t/s | sluice pp%s t/s | pp ratio | llama.cpp tg%s t/s | sluice tg%s t/s | tg ratio |\n' \
    "$P" "$P" "$N" "$N"
printf '|---|---:|---:|---:|---:|---:|---:|\n'
for MODEL in "$@"; do
    [ -f "$MODEL" ] || { echo "no such model: $MODEL" >&2; exit 2; }
    [ "$LLAMA_MMAP" = 0 ] || cat "$MODEL" > /dev/null   # page-cache it once: llama.cpp's mmap then runs from RAM
    : > "$TMP/lpp"; : > "$TMP/ltg"; : > "$TMP/spp"; : > "$TMP/stg"
    r=0
    while [ $r -lt "$ROUNDS" ]; do
        "$LLAMA_CPP_BIN/llama-bench" -m "$MODEL" -t "$THREADS" -p "$P" -n "$N" -r 1 -mmp "$LLAMA_MMAP" -o csv \
            > "$TMP/l.csv" 2> "$TMP/l.err" || { tail -5 "$TMP/l.err" >&2; exit 1; }
        csv_cols "$TMP/l.csv" n_prompt n_gen avg_ts | awk -v p="$P" '$1==p && $2==0 {print $3}' >> "$TMP/lpp"
        csv_cols "$TMP/l.csv" n_prompt n_gen avg_ts | awk -v n="$N" '$1==0 && $2==n {print $3}' >> "$TMP/ltg"
        "$BUILD/sluice" bench -m "$MODEL" --mode resident -t "$THREADS" -p "$P" -n "$N" -r 1 -o csv \
            > "$TMP/s.csv" 2> "$TMP/s.err" || { tail -5 "$TMP/s.err" >&2; exit 1; }
        csv_cols "$TMP/s.csv" prompt_tps decode_tps | head -1 > "$TMP/s.row"
        awk '{print $1}' "$TMP/s.row" >> "$TMP/spp"
        awk '{print $2}' "$TMP/s.row" >> "$TMP/stg"
        r=$((r + 1))
    done
    lpp=$(median < "$TMP/lpp"); ltg=$(median < "$TMP/ltg")
    spp=$(median < "$TMP/spp"); stg=$(median < "$TMP/stg")
    printf '| %s | %.2f | %.2f | %.2fx | %.2f | %.2f | %.2fx |\n' "$(basename "$MODEL")" "$lpp" "$spp" \
        "$(awk -v a="$spp" -v b="$lpp" 'BEGIN{print a/b}')" "$ltg" "$stg" \
        "$(awk -v a="$stg" -v b="$ltg" 'BEGIN{print a/b}')"
done
echo
echo "resident, $THREADS threads, pp $P / tg $N tokens, median of $ROUNDS alternated runs;"
echo "llama.cpp: $LLAMA_CPP_BIN${LLAMA_CPP_NAME:+ ($LLAMA_CPP_NAME)}, mmap $LLAMA_MMAP"
