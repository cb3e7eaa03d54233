#!/bin/sh
# The balloon experiment of perf/pressure_balloon.sh with a simulated machine,
# for hosts where other programs (or balloons) move MemAvailable: the ladder
# reads a meminfo file (--pressure-meminfo) this script rewrites every 100 ms
# as  START - RSS  (a machine with START free before the run), and from DELAY
# seconds on as  START - RSS - H, H fixed then so that it reads END: a balloon
# that grows once and holds. Memory the run gives back raises it, as on a real
# machine. Prints the ladder's steps, RSS over time and the lag from "under the
# floor" to "back above the floor".
#   perf/pressure_sim.sh MODEL [N_TOKENS] [START] [END] [FLOOR] [DELAY] [-- extra run flags]
#   defaults: 48, 6G, 1.5G, 2G, 10 s
set -u
MODEL=${1:?usage: perf/pressure_sim.sh MODEL [N] [START] [END] [FLOOR] [DELAY] [-- flags]}
shift
N=${1:-48}; START=${2:-6G}; END=${3:-1.5G}; FLOOR=${4:-2G}; DELAY=${5:-10}
[ $# -ge 5 ] && shift 5 || shift $#
[ "${1:-}" = "--" ] && shift
B=${BUILD:-build}
TMP=${TMPDIR:-/tmp}/sl_pressure_sim.$$
mkdir -p "$TMP"
RUN=
trap '[ -n "$RUN" ] && kill $RUN 2>/dev/null; rm -rf "$TMP"' EXIT INT TERM
S=$(numfmt --from=iec "$START"); E=$(numfmt --from=iec "$END"); FL=$(numfmt --from=iec "$FLOOR")
echo "MemAvailable: $((S / 1024)) kB" >"$TMP/meminfo"
t0=$(date +%s.%N)
"$B/sluice" run -m "$MODEL" --mode stream --mem-budget "$START" -p "Write a long story about a lighthouse." \
    -n "$N" --temp 0 --ignore-eos -t 2 --no-display-prompt --json \
    --pressure-floor "$FLOOR" --pressure-meminfo "$TMP/meminfo" "$@" >"$TMP/out" 2>"$TMP/err" & RUN=$!
H=; echo "t,rss,avail" >"$TMP/csv"
while kill -0 $RUN 2>/dev/null; do
    rss=$(awk '/^VmRSS/ {printf "%.0f", $2 * 1024}' /proc/$RUN/status 2>/dev/null)
    [ -n "$rss" ] || break
    t=$(echo "$(date +%s.%N) - $t0" | bc)
    if [ -z "$H" ] && [ "$(echo "$t > $DELAY" | bc)" = 1 ]; then H=$((S - rss - E)); [ $H -lt 0 ] && H=0; TB=$t; fi
    av=$((S - rss - ${H:-0}))
    echo "MemAvailable: $((av / 1024)) kB" >"$TMP/meminfo.new" && mv "$TMP/meminfo.new" "$TMP/meminfo"
    echo "$t,$rss,$av" >>"$TMP/csv"
    sleep 0.1
done
wait $RUN; rc=$?; RUN=
echo "exit status $rc; balloon of $(numfmt --to=iec ${H:-0}) simulated from ${TB:-never} s"
awk -F, -v fl="$FL" -v tb="${TB:-1e9}" 'NR == 2 { } NR > 1 { if ($2 > peak) peak = $2 }
    NR > 1 && $1 >= tb { if (!under && $3 < fl) { under = $1; ru = $2 }
                         if (under && !back && $3 >= fl) { back = $1; rb = $2 } }
    END { printf "peak RSS %.2f GiB; ", peak / 2^30
          if (under) printf "under the floor at %.1f s (RSS %.2f GiB)", under, ru / 2^30
          if (back) printf ", back above at %.1f s (RSS %.2f GiB): lag %.2f s\n", back, rb / 2^30, back - under
          else printf "\n" }' "$TMP/csv"
grep -h "pressure_step" "$TMP/err" | head -40
grep -h "tok/s" "$TMP/err"
tail -n1 "$TMP/err"
cp "$TMP/csv" "${OUT:-/tmp}/pressure_sim.csv"
