#!/bin/sh
# perf/compare_llamacpp.sh's report, from repetitions whose medians, ranges, ratios
# and bounds are known (RENDER_ONLY: no model is run). Fails on any wrong cell.
set -eu
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
: > "$T/model.gguf"   # the report names it; nothing reads it
G=2147483648          # 2 GiB
cat > "$T/r.raw.csv" <<EOF
time,engine,free_bytes,test,rep,value
00:00:00,host,0,mem_available,0,21474836480
00:00:01,llama.cpp,0,pp64,1,20
00:00:01,llama.cpp,0,pp64,2,22
00:00:01,llama.cpp,0,pp64,3,30
00:00:02,sluice,0,pp64,1,40
00:00:02,sluice,0,pp64,2,44
00:00:02,sluice,0,pp64,3,50
00:00:03,llama.cpp,0,tg32,1,5
00:00:03,sluice,0,tg32,1,6
00:00:04,sluice,$G,tg8,1,1
00:00:04,sluice,$G,tg8,2,3
00:00:04,llama.cpp,$G,tg8,1,0.5
00:00:04,llama.cpp,$G,tg8,2,0.25
00:00:05,disk,0,read,1,1000000000
00:00:05,disk,$G,read,1,2000000000
00:00:05,disk,$G,read,2,3000000000
00:00:05,mem,0,read,1,40000000000
00:00:05,model,0,weight_bytes,1,4000000000
EOF
OUT=$T/r RENDER_ONLY=1 LLAMA_CPP_NAME=test sh perf/compare_llamacpp.sh "$T/model.gguf" \
    > "$T/stdout" 2> "$T/stderr" || { cat "$T/stderr"; echo "FAILED: compare_llamacpp.sh render"; exit 1; }
fail=0
expect() {   # expect PATTERN: a line of the table matching it (fixed string)
    grep -qF -- "$1" "$T/r.md" || { echo "FAILED: no '$1' in the report"; fail=1; }
}
# medians [min-max] n, ratio of medians; resident bound = memory 40 GB/s / 4 GB = 10 t/s
expect "| pp64 | resident (20.0 GiB) | 22.00 [20.00-30.00] n=3 | 44.00 [40.00-50.00] n=3 (resident) | 2.00x | - |"
expect "| tg32 | resident (20.0 GiB) | 5.00 [5.00-5.00] n=1 | 6.00 [6.00-6.00] n=1 (resident) | 1.20x | 10.00 |"
# 2 GiB free: median of two = mean; disk: the best of 1, 2, 3 GB/s; 3e9 / (4e9 - 2^31) = 1.62
expect "| tg8 | 2 GiB | 0.38 [0.25-0.50] n=2 | 2.00 [1.00-3.00] n=2 (stream) | 5.33x | 1.62 |"
expect "Disk 3.00 GB/s"
expect "llama.cpp test;"
# pp rows come before tg rows, and the resident block before the free-memory points
order=$(grep -o '^| [pt][pg][0-9]* | [^|]*|' "$T/r.md" | tr -d ' ' | tr '\n' ' ')
[ "$order" = "|pp64|resident(20.0GiB)| |tg32|resident(20.0GiB)| |tg8|2GiB| " ] ||
    { echo "FAILED: row order '$order'"; fail=1; }
grep -q '^sluice,2147483648,tg8,2,2,1,3$' "$T/r.csv" || { echo "FAILED: r.csv"; fail=1; }
if command -v python3 > /dev/null 2>&1; then
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["points"]) == 6 and d["weight_bytes"] == 4e9' \
        "$T/r.json" || { echo "FAILED: r.json"; fail=1; }
fi
if command -v gnuplot > /dev/null 2>&1; then
    grep -q '<svg' "$T/r.svg" || { echo "FAILED: no plot"; fail=1; }
else
    grep -q 'gnuplot not found' "$T/stderr" || { echo "FAILED: a missing gnuplot is not reported"; fail=1; }
fi
[ $fail = 0 ] && echo "perf_compare_check: ok"
exit $fail
