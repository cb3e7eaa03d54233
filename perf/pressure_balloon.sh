#!/bin/sh
# Memory-pressure ladder under a balloon (engine/pressure.c): the machine is
# made to look like it has START free, a generation starts, and after DELAY
# seconds a second balloon takes free memory down to END. Samples the
# process's RSS and MemAvailable every 100 ms, prints the ladder's steps, and
# measures the lag from "available fell under the floor" to the first step
# and to "available back above the floor" (RSS given back).
#   perf/pressure_balloon.sh MODEL [N_TOKENS] [START] [END] [FLOOR] [DELAY]
#   defaults: 48 tokens, 6G, 1.5G, 2G, 20 s. LLAMA=path/to/llama-completion
#   also runs llama.cpp under the same two balloons (no ladder: the kernel pages
#   its mmap).
# SLUICE_FLAGS: more `sluice run` flags (e.g. --mem-budget 3G, so that the plan leaves
# room that the second balloon then takes). Needs build/sluice and build/balloon (make
# all). Kills only what it started.
set -u
MODEL=${1:?usage: perf/pressure_balloon.sh MODEL [N_TOKENS] [START] [END] [FLOOR] [DELAY]}
N=${2:-48}; START=${3:-6G}; END=${4:-1.5G}; FLOOR=${5:-2G}; DELAY=${6:-20}
B=${BUILD:-build}
TMP=${TMPDIR:-/tmp}/sl_pressure.$$
mkdir -p "$TMP"
BAL1=; BAL2=; RUN=
cleanup() {
    for p in $RUN $BAL2 $BAL1; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
}
trap 'cleanup; rm -rf "$TMP"' EXIT INT TERM
avail() { awk '/^MemAvailable/ {printf "%.0f\n", $2 * 1024}' /proc/meminfo; }
now() { date +%s.%N; }
bytes() { numfmt --from=iec "$1"; }

# $1 = label, rest = command; sets globals, writes $TMP/$label.csv (t, rss, avail)
run_under_balloons() {
    label=$1; shift
    : >"$TMP/b1.ready"; : >"$TMP/b2.ready"
    "$B/balloon" --leave "$START" --floor 512M --ready-fd 3 3>"$TMP/b1.ready" & BAL1=$!
    while [ ! -s "$TMP/b1.ready" ]; do sleep 0.2; kill -0 $BAL1 2>/dev/null || { echo "balloon 1 died"; return 1; }; done
    echo "[$label] balloon 1 ready: $(cat "$TMP/b1.ready") (MemAvailable $(numfmt --to=iec "$(avail)"))"
    t0=$(now)
    "$@" >"$TMP/$label.out" 2>"$TMP/$label.err" & RUN=$!
    echo "t,rss,avail" >"$TMP/$label.csv"
    started2=0; peak=0
    while kill -0 $RUN 2>/dev/null; do
        t=$(now)
        rss=$(awk '/^VmRSS/ {printf "%.0f\n", $2 * 1024}' /proc/$RUN/status 2>/dev/null)
        [ -n "$rss" ] || break
        echo "$(echo "$t - $t0" | bc),$rss,$(avail)" >>"$TMP/$label.csv"
        [ "$rss" -gt "$peak" ] && peak=$rss
        if [ $started2 = 0 ] && [ "$(echo "$t - $t0 > $DELAY" | bc)" = 1 ]; then
            "$B/balloon" --leave "$END" --floor 512M --ready-fd 3 3>"$TMP/b2.ready" & BAL2=$!
            tb2=$(echo "$(now) - $t0" | bc); started2=1
        fi
        sleep 0.1
    done
    wait $RUN; rc=$?; RUN=
    kill $BAL2 $BAL1 2>/dev/null; wait $BAL2 $BAL1 2>/dev/null; BAL1=; BAL2=
    echo "[$label] exit status $rc (137 = SIGKILL, e.g. the OOM killer); peak RSS $(numfmt --to=iec $peak)"
    [ $started2 = 1 ] && echo "[$label] balloon 2 started at ${tb2}s: $(cat "$TMP/b2.ready")"
    fl=$(bytes "$FLOOR")
    # first sample under the floor after balloon 2, first one back above it afterwards
    awk -F, -v fl="$fl" -v tb="${tb2:-1e9}" 'NR > 1 && $1 >= tb {
            if (!under && $3 < fl) { under = $1; rss_u = $2 }
            if (under && !back && $3 >= fl) { back = $1; rss_b = $2 } }
        END { if (under) printf "['"$label"'] available < floor at %.1fs (RSS %.2f GiB); ", under, rss_u / 2^30;
              if (back) printf "back above at %.1fs (RSS %.2f GiB): lag %.1f s\n", back, rss_b / 2^30, back - under;
              else if (under) printf "never back above the floor\n"; else printf "never under the floor\n" }' \
        "$TMP/$label.csv"
    grep -h "tok/s\|pressure_step\|pressure \|llama_perf\|eval time" "$TMP/$label.err" | head -40
    cp "$TMP/$label.csv" "${OUT:-/tmp}/pressure_$label.csv"
    return 0
}

P="Write a long story about a lighthouse keeper who finds a map."
run_under_balloons sluice "$B/sluice" run -m "$MODEL" --mode stream -p "$P" -n "$N" --temp 0 --ignore-eos -t 2 \
    --pressure-floor "$FLOOR" --json --no-display-prompt ${SLUICE_FLAGS:-}
if [ -n "${LLAMA:-}" ] && [ -x "$LLAMA" ]; then
    run_under_balloons llama "$LLAMA" -m "$MODEL" -p "$P" -n "$N" --temp 0 --ignore-eos -t 2 -no-cnv
fi
