#!/bin/sh
# The i-quant headline (#18): a Llama-3.3-70B-shaped IQ2_XS file streamed with
# FREE (default 1.4G, TrueLarge's 4 GB phone) of free memory, in one run, each
# step under the same build/balloon --leave FREE (outside the program):
#   1. Sluice: SREPS x `sluice bench --mode stream -r 1 -o json` (each its own
#      process and its own in-run O_DIRECT disk bandwidth pass): medians of
#      prompt and decode ms/token, of the disk bound (bytes read per token /
#      that bandwidth) and of peak RSS;
#   2. llama.cpp (an existing build, mmap, its default): decode (tg LN) and
#      prompt (pp LP) as two llama-bench runs with few tokens (it re-reads the
#      file through the page cache every token); peak RSS from /usr/bin/time.
# Every step starts with the file evicted (posix_fadvise DONTNEED via dd
# iflag=nocache) and has a wall-clock cap (timeout, which the balloon forwards),
# so the whole run stays under SCAP + LTIMEOUT + the balloon fills (~22 min
# with the defaults). A capped llama.cpp step gives a lower bound of the ratio.
# Uses build/balloon: run it under the memory lock,
#   flock /work/notes/mem.lock perf/iq_70b.sh > result.md
# Make the model first (not under the lock): sluice mkmodel --preset 70b --type iq2_xs -o MODEL
# env: MODEL, FREE (1.4G), THREADS (2), P/N (sluice prompt/decode tokens, 8/4),
#      SREPS (3), SCAP (s, 600: all of Sluice), LP/LN (llama.cpp prompt/decode
#      tokens, 4/1), LTIMEOUT (s, 600: both llama.cpp steps, half each),
#      LLAMA_CPP_BIN (/work/llama/build/bin), BUILD (build)
set -eu
BUILD=${BUILD:-build}
MODEL=${MODEL:-$HOME/.cache/sluice/models/synth-70b-iq2_xs.gguf}
FREE=${FREE:-1.4G}
THREADS=${THREADS:-2}
P=${P:-8}; N=${N:-4}; SREPS=${SREPS:-3}; SCAP=${SCAP:-600}
LP=${LP:-4}; LN=${LN:-1}
LLAMA_CPP_BIN=${LLAMA_CPP_BIN:-/work/llama/build/bin}
LTIMEOUT=${LTIMEOUT:-600}
die() { echo "iq_70b: $*" >&2; exit 2; }
[ -x "$BUILD/sluice" ] && [ -x "$BUILD/balloon" ] || die "$BUILD/sluice or $BUILD/balloon missing: run make first"
[ -f "$MODEL" ] || die "$MODEL not found: sluice mkmodel --preset 70b --type iq2_xs -o $MODEL (before taking the lock)"
command -v python3 > /dev/null || die "python3 needed for the medians"
# A balloon cannot make room that other processes hold: refuse a busy machine
# (the 19:30 run waited 301 s for a balloon that never reached its target).
avail_kb=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
free_kb=$(python3 -c "import re,sys; m=re.fullmatch(r'([0-9.]+)([KMG]?)','$FREE'); \
print(int(float(m[1])*{'':1/1024,'K':1,'M':1024,'G':1048576}[m[2]])) if m else sys.exit(1)") \
    || die "FREE=$FREE: want e.g. 1.4G or 800M"
[ "$avail_kb" -ge $((free_kb + 4194304)) ] ||
    die "MemAvailable $avail_kb kB is not FREE + 4 GiB: another memory-heavy run is on (use the lock)"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
evict() { dd if="$1" iflag=nocache count=0 status=none; }
t0=$(date +%s)

# squeeze CAP OUT ERR CMD...: CMD under the balloon, stopped after CAP s;
# prints the balloon's own line (what it held, what was left) and the status
squeeze() {
    cap=$1 out=$2 err=$3; shift 3
    evict "$MODEL"
    rc=0
    timeout -k 20 "$cap" "$BUILD/balloon" --leave "$FREE" -- "$@" > "$out" 2> "$err" || rc=$?
    grep '^balloon:' "$err" || echo "balloon: no report (it did not finish filling)"
    [ "$rc" = 0 ] || echo "exit status $rc$( [ "$rc" = 124 ] && echo ": stopped by the $cap s cap")"
    return 0
}

echo "# 70B IQ2_XS with $FREE free: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $THREADS threads"
echo
echo "model: \`$MODEL\` ($(stat -c %s "$MODEL") bytes); MemAvailable before: $avail_kb kB; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# 1. Sluice: SREPS single-rep benches in one balloon (each its own process)
echo "## Sluice: $SREPS x \`balloon --leave $FREE -- sluice bench -m MODEL --mode stream -t $THREADS -p $P -n $N -r 1 -o json\`"
echo
echo '```'
squeeze "$SCAP" "$TMP/sluice.json" "$TMP/sluice.err" sh -c \
    'i=0; while [ $i -lt "$1" ]; do i=$((i + 1)); "$2" bench -m "$3" --mode stream -t "$4" -p "$5" -n "$6" -r 1 -o json || exit; done' \
    sh "$SREPS" "$BUILD/sluice" "$MODEL" "$THREADS" "$P" "$N"
tr '\r' '\n' < "$TMP/sluice.err" | grep -E '^bench: disk|rep [0-9]|error|fail' || true
echo '```'
echo
python3 - "$TMP/sluice.json" <<'EOF'
import json, re, statistics as st, sys
txt = open(sys.argv[1]).read()
runs = [r for a in re.findall(r'\[\s*\{.*?\}\s*\]', txt, re.S) for r in json.loads(a)]
if not runs:
    print("no Sluice run finished"); sys.exit(0)
med = lambda k: st.median(r[k] for r in runs)
print(f"{len(runs)} runs; median of each column:\n")
print("| prompt ms/token | decode ms/token | disk bound ms/token | of bound | GB read/token | disk GB/s (O_DIRECT, in run) | peak RSS |")
print("|---:|---:|---:|---:|---:|---:|---:|")
print(f"| {1000 / med('prompt_tps'):.0f} | {med('ms_per_token'):.0f} | {med('bound_ms_per_token'):.0f} | "
      f"{med('ms_per_token') / med('bound_ms_per_token'):.2f}x | {med('bytes_per_token') / 1e9:.2f} | "
      f"{med('disk_bytes_per_s_measured') / 1e9:.2f} | {med('peak_rss_bytes') / 2**30:.2f} GiB |")
print("\nper run (decode ms/token, bound ms/token, prompt tok/s):",
      ", ".join(f"{r['ms_per_token']:.0f}/{r['bound_ms_per_token']:.0f}/{r['prompt_tps']:.2f}" for r in runs))
EOF
echo
echo "(Sluice step: $(( $(date +%s) - t0 )) s)"
echo

# 2. llama.cpp, mmap, same free memory
llama() {   # llama NAME ARGS...
    name=$1; shift
    t1=$(date +%s)
    echo "### llama.cpp $name: \`balloon --leave $FREE -- llama-bench -m MODEL -t $THREADS $* -r 1 --no-warmup -o csv\` (mmap)"
    echo
    echo '```'
    squeeze $((LTIMEOUT / 2)) "$TMP/llama.csv" "$TMP/llama.err" \
        /usr/bin/time -v -o "$TMP/llama.time" \
        "$LLAMA_CPP_BIN/llama-bench" -m "$MODEL" -t "$THREADS" "$@" -r 1 --no-warmup -o csv
    cat "$TMP/llama.csv"
    python3 - "$TMP/llama.csv" <<'EOF'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    n = int(r["n_prompt"]) + int(r["n_gen"])
    print(f"=> {float(r['avg_ns']) / 1e6 / n:.1f} ms/token ({r['n_prompt']} prompt, {r['n_gen']} decode tokens)")
EOF
    grep -E 'Maximum resident|Elapsed|Major' "$TMP/llama.time" 2> /dev/null || true
    grep -iE 'error|failed' "$TMP/llama.err" | head -5 || true
    echo '```'
    echo "(step: $(( $(date +%s) - t1 )) s)"
    echo
}
if [ -x "$LLAMA_CPP_BIN/llama-bench" ]; then
    echo "## llama.cpp 2026-08 ($LLAMA_CPP_BIN), same free memory, each step capped at $((LTIMEOUT / 2)) s"
    echo
    llama decode -p 0 -n "$LN"
    llama prompt -p "$LP" -n 0
else
    echo "## llama.cpp: $LLAMA_CPP_BIN/llama-bench not found, skipped"
fi
echo "(whole run: $(( $(date +%s) - t0 )) s)"
