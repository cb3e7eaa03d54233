#!/bin/sh
# `make bench`: a representative sweep in well under 15 minutes on this kind of
# machine. Generates the Llama-3-8B-shaped Q4_K model into the cache if absent,
# profiles the device (disk on the model's file, memory, matvec), then runs
# `sluice bench` over modes x "device with N GiB free" (balloon) and writes
# perf/results/<date>-<host>.{md,json,svg}.
# Knobs (environment): BUILD, BENCH_MODEL, BENCH_FREE, BENCH_MODES, BENCH_N, BENCH_P,
# BENCH_REPS, BENCH_THREADS.
set -eu
BUILD=${BUILD:-build}
SLUICE=$BUILD/sluice
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/sluice
MODEL=${BENCH_MODEL:-$CACHE/models/synth-8b-q4_k.gguf}
FREE=${BENCH_FREE:-2.5G,6G,16G}
MODES=${BENCH_MODES:-stream,mmap,auto}
N=${BENCH_N:-8}
P=${BENCH_P:-32}
REPS=${BENCH_REPS:-2}
THREADS=${BENCH_THREADS:-$(nproc)}
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

echo "== sluice bench"
CMD="$SLUICE bench -m $MODEL --mode $MODES --free $FREE -p $P -n $N -r $REPS -t $THREADS"
$CMD -o json --out "$OUT.json" --plot "$OUT.svg" 2> "$OUT.bench.log" || true
# the markdown table is printed to stderr as well when -o json --out is used
sed -n '/^model: /,$p' "$OUT.bench.log" > "$OUT.table.md"

{
    echo "# Sluice bench — $STAMP on $HOST"
    echo
    echo "commit \`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`; $(nproc) CPUs; $(awk '/MemTotal/ {printf "%.1f GiB RAM", $2/1048576}' /proc/meminfo); kernel $(uname -r)"
    echo
    echo "command: \`$CMD\`"
    echo
    echo "## Device profile (\`sluice profile -m MODEL --seconds 20\`)"
    echo
    cat "$OUT.profile.txt"
    echo
    echo "## Bench"
    echo
    cat "$OUT.table.md"
    echo
    echo "![decode tok/s vs free memory]($(basename "$OUT.svg"))"
    echo
    echo "Raw per-configuration data: \`$(basename "$OUT.json")\`."
} > "$OUT.md"
rm -f "$OUT.table.md" "$OUT.profile.txt"
echo "== wrote $OUT.md (+ .json, .svg, .bench.log)"
