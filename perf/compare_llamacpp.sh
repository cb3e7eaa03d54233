#!/bin/sh
# Sluice vs llama.cpp (an EXISTING build; this script never fetches or builds
# it) on one GGUF, same threads, same free memory, in ONE run:
#   - resident: prompt processing (PP, e.g. pp64, pp512) and decode (tgN_RES),
#     llama.cpp on mmap of the page-cached file (LLAMA_MMAP=0: its own buffers),
#     Sluice --mode resident;
#   - under each free-memory point (build/balloon holds the rest of RAM, no
#     cgroups): decode (tgN), Sluice --mode stream vs llama.cpp mmap.
# Each pair runs alternated (llama.cpp first on odd repetitions, Sluice first on
# even), REPS times; the table has medians and the [min-max] of the repetitions.
# Every Sluice run measures the disk (sequential O_DIRECT) first: the disk bound
# comes from the same run. Without LLAMA_CPP_BIN only Sluice runs (`make bench`).
#
#   LLAMA_CPP_BIN=/path/to/llama.cpp/build/bin perf/compare_llamacpp.sh MODEL
#   env: FREE (free-memory points, default 1.5G,2G,2.5G,3G,4G,6G; "" = none),
#        RESIDENT (1; 0 = skip the resident block), THREADS (2), PP (64,512),
#        N_RES (32: resident decode tokens), N (8: decode tokens under a balloon),
#        REPS (3), LOW_FREE/LOW_REPS (points <= LOW_FREE run LOW_REPS repetitions:
#        llama.cpp mmap is slow there; default 2.5G / 2), LLAMA_MMAP (1),
#        LLAMA_CPP_NAME (which build, for the footer), BUILD (build),
#        OUT (perf/results/<date>-<host>-vs-llamacpp).
# Raw rows accumulate in OUT.raw.csv, so a long sweep can run in chunks (e.g. one
# FREE list per hold of a lock; RESIDENT=0 after the first); RENDER_ONLY=1 only
# rebuilds OUT.md / OUT.csv / OUT.json / OUT.svg from it. Delete OUT.raw.csv to
# start over. No gnuplot: the data is written and the plot is skipped (said so).
set -eu
[ $# -ge 1 ] || { echo "usage: [LLAMA_CPP_BIN=DIR] $0 MODEL" >&2; exit 2; }
MODEL=$1
BUILD=${BUILD:-build}
THREADS=${THREADS:-2}
FREE=${FREE-1.5G,2G,2.5G,3G,4G,6G}
RESIDENT=${RESIDENT:-1}
PP=${PP:-64,512}; N_RES=${N_RES:-32}; N=${N:-8}
REPS=${REPS:-3}; LOW_FREE=${LOW_FREE:-2.5G}; LOW_REPS=${LOW_REPS:-2}
LLAMA_MMAP=${LLAMA_MMAP:-1}
LLAMA=${LLAMA_CPP_BIN:-}
OUT=${OUT:-perf/results/$(date -u +%Y-%m-%d)-$(hostname -s 2>/dev/null || hostname)-vs-llamacpp}
RAW=$OUT.raw.csv
[ -f "$MODEL" ] || { echo "no such model: $MODEL" >&2; exit 2; }
[ "${RENDER_ONLY:-0}" = 1 ] || { [ -x "$BUILD/sluice" ] && [ -x "$BUILD/balloon" ]; } || { echo "run make first" >&2; exit 2; }
if [ -n "$LLAMA" ] && [ ! -x "$LLAMA/llama-bench" ]; then
    echo "compare_llamacpp.sh: LLAMA_CPP_BIN=$LLAMA has no llama-bench (this script only runs an existing build)" >&2
    exit 2
fi
[ -n "$LLAMA" ] || echo "compare_llamacpp.sh: LLAMA_CPP_BIN not set: Sluice only" >&2
mkdir -p "$(dirname "$OUT")"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

bytes() { awk -v s="$1" 'BEGIN { u = toupper(substr(s, length(s))); v = s + 0
    if (u == "K") v *= 1024; else if (u == "M") v *= 1048576; else if (u == "G") v *= 1073741824
    printf "%.0f", v }'; }
csv_cols() {   # csv_cols FILE NAME...: the named columns of a CSV
    f=$1; shift
    awk -F, -v want="$*" 'NR==1 { n=split(want, w, " "); for (i=1;i<=NF;i++) { gsub(/"/,"",$i); idx[$i]=i }; next }
        { gsub(/"/,""); line=""; for (k=1;k<=n;k++) line=line (k>1?" ":"") $(idx[w[k]]); print line }' "$f"
}
json_num() {   # json_num FILE KEY: first numeric value of "KEY": in sluice bench's JSON
    sed -n "s/.*\"$2\": \([-0-9.e+]*\).*/\1/p" "$1" | head -1
}
row() { echo "$(date -u +%H:%M:%S),$*" >> "$RAW"; }   # time,engine,free_bytes,test,rep,value
[ -f "$RAW" ] || echo "time,engine,free_bytes,test,rep,value" > "$RAW"

# Under a balloon (--track) that re-grows after each run: wait until it holds its target again.
settle() {   # settle FREE_BYTES (0: nothing to wait for)
    [ "$1" != 0 ] || return 0
    i=0
    while [ $i -lt 150 ] && [ "$(awk -v f="$1" '/MemAvailable/ { print ($2 * 1024 > f * 1.05 + 67108864) }' /proc/meminfo)" = 1 ]; do
        sleep 0.2; i=$((i + 1))
    done
}

# llama-bench, one repetition (under the point's balloon, if any); rows named by test.
run_llama() {   # run_llama FREE_BYTES REP ARGS...
    fb=$1; rep=$2; shift 2
    settle "$fb"
    if ! "$LLAMA/llama-bench" "$@" -m "$MODEL" -t "$THREADS" -r 1 -o csv > "$TMP/l.csv" 2> "$TMP/l.err"; then
        echo "llama-bench failed (free $fb):" >&2; tail -3 "$TMP/l.err" >&2; return 0
    fi
    csv_cols "$TMP/l.csv" n_prompt n_gen avg_ts | while read -r np ng ts; do
        if [ "$np" != 0 ]; then row "llama.cpp,$fb,pp$np,$rep,$ts"; else row "llama.cpp,$fb,tg$ng,$rep,$ts"; fi
    done
}

# sluice bench, one repetition; records decode (tgN), prompt (ppP, resident only), the disk and
# memory bandwidths it measured, and the weight bytes a token reads when nothing is cached.
run_sluice() {   # run_sluice FREE_BYTES REP MODE P N
    fb=$1; rep=$2; mode=$3; p=$4; n=$5
    settle "$fb"
    if ! "$BUILD/sluice" bench -m "$MODEL" --mode "$mode" -t "$THREADS" -p "$p" -n "$n" -r 1 \
            -o json --out "$TMP/s.json" 2> "$TMP/s.err" || ! grep -q decode_tps "$TMP/s.json"; then
        echo "sluice bench failed (free $fb):" >&2; tail -3 "$TMP/s.err" >&2; return 0
    fi
    if [ "$fb" = 0 ]; then row "sluice,$fb,pp$p,$rep,$(json_num "$TMP/s.json" prompt_tps)"; fi
    [ "$n" -le 1 ] || row "sluice,$fb,tg$n,$rep,$(json_num "$TMP/s.json" decode_tps)"
    row "disk,$fb,read,$rep,$(json_num "$TMP/s.json" disk_bytes_per_s_measured)"
    row "mem,$fb,read,$rep,$(json_num "$TMP/s.json" mem_bytes_per_s)"
    row "model,$fb,weight_bytes,$rep,$(json_num "$TMP/s.json" weight_bytes)"
}

if [ -n "${_POINT:-}" ]; then   # inside the balloon of one free-memory point
    fb=$_POINT
    reps=$REPS; [ "$fb" -gt "$(bytes "$LOW_FREE")" ] || reps=$LOW_REPS
    r=1
    while [ "$r" -le "$reps" ]; do
        echo "== $_POINT_NAME free, rep $r/$reps" >&2
        for side in $([ $((r % 2)) = 1 ] && echo "l s" || echo "s l"); do
            if [ "$side" = l ] && [ -n "$LLAMA" ]; then run_llama "$fb" "$r" -p 0 -n "$N" -mmp 1
            elif [ "$side" = s ]; then run_sluice "$fb" "$r" stream 1 "$N"; fi
        done
        r=$((r + 1))
    done
    exit 0
fi

if [ "${RENDER_ONLY:-0}" != 1 ]; then
    echo "== $MODEL, $THREADS threads; rows -> $RAW" >&2
    if [ "$RESIDENT" = 1 ]; then
        row "host,0,mem_available,0,$(awk '/MemAvailable/ { printf "%.0f", $2 * 1024 }' /proc/meminfo)"
        first_pp=${PP%%,*}; r=1
        while [ "$r" -le "$REPS" ]; do
            echo "== resident rep $r/$REPS" >&2
            for side in $([ $((r % 2)) = 1 ] && echo "l s" || echo "s l"); do
                if [ "$side" = l ] && [ -n "$LLAMA" ]; then
                    [ "$LLAMA_MMAP" = 0 ] || cat "$MODEL" > /dev/null   # mmap of a page-cached file: in RAM
                    run_llama 0 "$r" -p "$PP" -n "$N_RES" -mmp "$LLAMA_MMAP"
                elif [ "$side" = s ]; then
                    run_sluice 0 "$r" resident "$first_pp" "$N_RES"
                    for p in $(echo "$PP" | tr ',' ' '); do
                        [ "$p" = "$first_pp" ] || run_sluice 0 "$r" resident "$p" 1
                    done
                fi
            done
            r=$((r + 1))
        done
    fi
    # one balloon per point, held through all its repetitions (filling ~20 GiB takes tens of
    # seconds here); inside it both engines see the same device with F free
    for F in $(echo "$FREE" | tr ',' ' '); do
        fb=$(bytes "$F")
        "$BUILD/balloon" -q --track --leave "$fb" -- env _POINT="$fb" _POINT_NAME="$F" OUT="$OUT" sh "$0" "$MODEL" ||
            echo "compare_llamacpp.sh: the $F point failed" >&2
    done
fi

# ---- render: medians [min-max] per (engine, point, test), the disk bound, the table and plot ----
awk -F, -v out="$TMP/agg" 'NR > 1 { k = $2 SUBSEP $3 SUBSEP $4; n[k]++; v[k, n[k]] = $6 + 0 }
    END {
        for (k in n) {
            m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
            for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
            med = m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
            split(k, f, SUBSEP); printf "%s,%s,%s,%d,%.6g,%.6g,%.6g\n", f[1], f[2], f[3], m, med, a[1], a[m] > out
        }
    }' "$RAW"
[ -s "$TMP/agg" ] || { echo "no data in $RAW" >&2; exit 1; }
sort -t, -k2,2n -k3,3 "$TMP/agg" > "$TMP/agg.s"
get() { awk -F, -v e="$1" -v f="$2" -v t="$3" -v c="$4" '$1==e && $2==f && $3==t { print $c; exit }' "$TMP/agg.s"; }
best() {   # the highest over every repetition of every point: a bound must not be beaten
    awk -F, -v e="$1" -v t="$2" 'NR > 1 && $2==e && $4==t && $6 + 0 > m { m = $6 + 0 } END { printf "%.6g", m }' "$RAW"
}
DISK=$(best disk read); MEM=$(best mem read); W=$(best model weight_bytes)
AVAIL=$(get host 0 mem_available 5); AVAIL=${AVAIL:-0}
# ideal bound at F bytes free: every free byte caches weights, the rest is read from disk per token;
# never above reading all weights from RAM
bound() { awk -v d="$DISK" -v m="$MEM" -v w="$W" -v f="$1" 'BEGIN {
    mb = w > 0 && m > 0 ? m / w : 0; db = w > f && d > 0 ? d / (w - f) : 1e30
    b = db < mb || mb == 0 ? db : mb; if (b >= 1e30 || b == 0) print "-"; else printf "%.2f", b }'; }
fmt() { [ -n "$1" ] && printf '%.2f [%.2f-%.2f] n=%s' "$2" "$3" "$4" "$1" || printf -- '-'; }
cell() { set -- $(get "$1" "$2" "$3" 4) $(get "$1" "$2" "$3" 5) $(get "$1" "$2" "$3" 6) $(get "$1" "$2" "$3" 7); fmt "${1:-}" "${2:-}" "${3:-}" "${4:-}"; }
ratio() { a=$(get sluice "$1" "$2" 5); b=$(get llama.cpp "$1" "$2" 5)
    awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", a / b; else print "-" }'; }
LNAME="llama.cpp ${LLAMA_CPP_NAME:-at ${LLAMA:-(not run)}}"
{
    echo "| test | free memory | llama.cpp mmap t/s | Sluice t/s | Sluice ÷ llama.cpp | bound t/s |"
    echo "|---|---:|---:|---:|---:|---:|"
    for t in $(awk -F, '$2==0 && ($1=="sluice" || $1=="llama.cpp") { print $3 }' "$TMP/agg.s" | sort -u | sort -k1.1,1.2 -k1.3n); do
        b=-; case $t in tg*) b=$(bound "$AVAIL");; esac
        echo "| $t | resident ($(awk -v a="$AVAIL" 'BEGIN { printf "%.1f GiB", a / 1073741824 }')) | $(cell llama.cpp 0 "$t") | $(cell sluice 0 "$t") (resident) | $(ratio 0 "$t") | $b |"
    done
    for fb in $(awk -F, '$2!=0 && ($1=="sluice" || $1=="llama.cpp") { print $2 }' "$TMP/agg.s" | sort -un); do
        for t in $(awk -F, -v f="$fb" '$2==f && ($1=="sluice" || $1=="llama.cpp") { print $3 }' "$TMP/agg.s" | sort -u); do
            echo "| $t | $(awk -v a="$fb" 'BEGIN { printf "%.3g GiB", a / 1073741824 }') | $(cell llama.cpp "$fb" "$t") | $(cell sluice "$fb" "$t") (stream) | $(ratio "$fb" "$t") | $(bound "$fb") |"
        done
    done
    echo
    echo "Model \`$(basename "$MODEL")\` ($(awk -v w="$W" 'BEGIN { printf "%.2f GB read per token when nothing is cached", w / 1e9 }')), $THREADS threads."
    echo "Median [min-max] over n alternated repetitions, each in its own process. $LNAME;"
    echo "llama-bench -mmp $LLAMA_MMAP resident (page-cached file), -mmp 1 under the balloon; Sluice: \`sluice bench --mode resident\` / \`--mode stream --free F\`."
    echo "Free memory: one \`build/balloon --leave F --track\` per point, held through all its runs (no cgroups; Sluice plans its budget from what is free). pp = prompt tokens/s, tg = decode tokens/s."
    echo "Bound = min(memory bandwidth ÷ weight bytes, disk bandwidth ÷ (weight bytes − free)): every free byte caching weights"
    echo "(an upper bound: the KV cache, activations and the runtime need some of it). Disk $(awk -v d="$DISK" 'BEGIN { printf "%.2f GB/s", d / 1e9 }') sequential O_DIRECT,"
    echo "memory $(awk -v m="$MEM" 'BEGIN { printf "%.1f GB/s", m / 1e9 }') read: the best of the measurements every Sluice run of this sweep makes first."
} > "$OUT.md"
cp "$TMP/agg.s" "$TMP/agg.csv"
{ echo "engine,free_bytes,test,n,median,min,max"; cat "$TMP/agg.s"; } > "$OUT.csv"
awk -F, -v d="$DISK" -v m="$MEM" -v w="$W" -v a="$AVAIL" -v th="$THREADS" -v model="$(basename "$MODEL")" -v ll="$LNAME" '
    BEGIN { printf "{\"model\": \"%s\", \"threads\": %d, \"llama_cpp\": \"%s\", \"disk_bytes_per_s\": %s, \"mem_bytes_per_s\": %s, \"weight_bytes\": %s, \"resident_mem_available_bytes\": %s, \"points\": [", model, th, ll, d + 0, m + 0, w + 0, a + 0 }
    $1 == "sluice" || $1 == "llama.cpp" { printf "%s\n  {\"engine\": \"%s\", \"free_bytes\": %s, \"test\": \"%s\", \"n\": %d, \"median\": %s, \"min\": %s, \"max\": %s}", k++ ? "," : "", $1, $2, $3, $4, $5, $6, $7 }
    END { print "\n]}" }' "$TMP/agg.s" > "$OUT.json"
cat "$OUT.md"

# the plot: decode t/s against free memory (log-log), resident at the right end
if ! command -v gnuplot > /dev/null 2>&1; then
    echo "compare_llamacpp.sh: gnuplot not found: $OUT.svg skipped (data in $OUT.csv / .json; make deps installs gnuplot-nox)" >&2
    exit 0
fi
TG=tg$N
RX=$(awk -v a="$AVAIL" 'BEGIN { printf "%.3f", (a > 0 ? a / 1073741824 : 16) }')
for e in sluice llama.cpp; do
    awk -F, -v e="$e" -v t="$TG" -v tr="tg$N_RES" -v rx="$RX" '$1==e && (($2!=0 && $3==t) || ($2==0 && $3==tr)) {
        printf "%.4f %s %s %s\n", $2 == 0 ? rx : $2 / 1073741824, $5, $6, $7 }' "$TMP/agg.s" | sort -g > "$TMP/$e.dat"
done
XT=$(awk -F, '($1=="sluice" || $1=="llama.cpp") && $2!=0 && !seen[$2]++ { printf "%s\"%g\" %.4f", n++ ? ", " : "", $2 / 1073741824, $2 / 1073741824 }' "$TMP/agg.s")
[ "$RX" = 16.000 ] || XT="$XT${XT:+, }\"resident\\n($(printf %.0f "$RX") GiB)\" $RX"
{
    echo "set terminal svg size 900,540 dynamic noenhanced font 'sans,12' background rgb 'white'"
    echo "set output '$OUT.svg'"
    echo "set title \"$(basename "$MODEL"): decode tokens/s vs free memory, $THREADS threads\""
    echo "set xlabel 'free memory (GiB; build/balloon holds the rest of RAM)'"
    echo "set ylabel 'decode tokens/s (median, bars: min-max of the repetitions)'"
    echo "set logscale xy; set grid; set key right bottom; set xrange [1.2:$(awk -v r="$RX" 'BEGIN { print r * 1.3 }')]"
    echo "set yrange [*:$(awk -F, -v m="$MEM" -v w="$W" '$1 == "sluice" || $1 == "llama.cpp" { if ($7 > y) y = $7 }
        END { if (w > 0 && m / w > y) y = m / w; print 1.5 * y }' "$TMP/agg.s")]"
    printf 'set xtics (%s)\n' "$XT"
    echo "W = $W; D = $DISK; M = $MEM; G = 1073741824.0"
    echo "bd(x) = W > x * G ? D / (W - x * G) : 1e30; mb = M / W; bound(x) = bd(x) < mb ? bd(x) : mb"
    echo "set samples 400"
    printf "plot bound(x) with lines dt 2 lw 2 lc rgb '#555555' title sprintf('bound: disk %%.2f GB/s, memory %%.0f GB/s (measured)', D / 1e9, M / 1e9)"
    printf ", '%s' using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#1f77b4' title 'Sluice (stream; resident at the right)'" "$TMP/sluice.dat"
    [ ! -s "$TMP/llama.cpp.dat" ] || printf ", '%s' using 1:2:3:4 with yerrorlines lw 2 pt 5 lc rgb '#d62728' title '%s (mmap)'" "$TMP/llama.cpp.dat" "$LNAME"
    echo
} > "$TMP/plot.gp"
gnuplot "$TMP/plot.gp" && echo "wrote $OUT.md .csv .json .svg (raw: $RAW)" >&2
