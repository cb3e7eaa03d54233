#!/bin/sh
# `make bench`: the free-memory sweep in < 20 minutes on this kind of machine
# (2 cores, 8B Q4_K_M): the device profile (disk on the model's file, memory,
# matvec), then perf/compare_llamacpp.sh — resident pp/tg, and decode under
# 1.5 ... 6 GiB free (balloon) — Sluice vs the llama.cpp build in LLAMA_CPP_BIN
# when it is set (Sluice alone otherwise). Writes perf/results/<date>-<host>.md
# (.csv, .json, .raw.csv, and .svg when gnuplot is installed).
# Model: BENCH_MODEL, else ~/.cache/sluice/models/synth-8b-q4_k_m.gguf if present,
# else synth-8b-q4_k.gguf (generated once with `sluice mkmodel --preset 8b`).
# Knobs (environment): BUILD, BENCH_MODEL, BENCH_FREE, BENCH_N, BENCH_REPS, BENCH_THREADS,
# LLAMA_CPP_BIN, LLAMA_CPP_NAME.
set -eu
BUILD=${BUILD:-build}
SLUICE=$BUILD/sluice
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/sluice
MODEL=${BENCH_MODEL:-$CACHE/models/synth-8b-q4_k_m.gguf}
[ -n "${BENCH_MODEL:-}" ] || [ -f "$MODEL" ] || MODEL=$CACHE/models/synth-8b-q4_k.gguf
HOST=$(hostname -s 2>/dev/null || hostname)
STAMP=$(date -u +%Y-%m-%d)
OUT=perf/results/$STAMP-$HOST
mkdir -p perf/results "$(dirname "$MODEL")"

if [ ! -f "$MODEL" ]; then
    echo "== generating $MODEL"
    "$SLUICE" mkmodel --preset 8b --type q4_k -o "$MODEL"
fi

echo "== sluice profile"
"$SLUICE" profile -m "$MODEL" --seconds 20 > "$OUT.profile.txt"
cat "$OUT.profile.txt"

echo "== perf/compare_llamacpp.sh"
rm -f "$OUT.raw.csv"
FREE=${BENCH_FREE:-1.5G,2G,2.5G,3G,4G,6G} N=${BENCH_N:-8} REPS=${BENCH_REPS:-3} THREADS=${BENCH_THREADS:-$(nproc)}
export FREE N REPS THREADS OUT BUILD
CMD="${LLAMA_CPP_BIN:+LLAMA_CPP_BIN=$LLAMA_CPP_BIN }FREE=$FREE N=$N REPS=$REPS THREADS=$THREADS perf/compare_llamacpp.sh $MODEL"
perf/compare_llamacpp.sh "$MODEL"
mv "$OUT.md" "$OUT.table.md"

{
    echo "# Sluice bench — $STAMP on $HOST"
    echo
    echo "commit \`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`; $(nproc) CPUs; $(awk '/MemTotal/ {printf "%.1f GiB RAM", $2/1048576}' /proc/meminfo); kernel $(uname -r)"
    echo
    echo "command: \`make bench\` = \`$CMD\`"
    echo
    echo "## Device profile (\`sluice profile -m MODEL --seconds 20\`)"
    echo
    cat "$OUT.profile.txt"
    echo
    echo "## Sluice vs llama.cpp, resident and under free-memory points"
    echo
    cat "$OUT.table.md"
    echo
    [ ! -f "$OUT.svg" ] || { echo "![decode tok/s vs free memory]($(basename "$OUT.svg"))"; echo; }
    echo "Data: \`$(basename "$OUT.csv")\` (medians), \`$(basename "$OUT.json")\`, every repetition in \`$(basename "$OUT.raw.csv")\`."
} > "$OUT.md"
rm -f "$OUT.table.md" "$OUT.profile.txt"
echo "== wrote $OUT.md (+ .csv, .json, .raw.csv$([ -f "$OUT.svg" ] && echo ", .svg"))"
