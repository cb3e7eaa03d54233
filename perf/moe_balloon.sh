#!/bin/sh
# The MoE streaming benchmark: a Qwen3-30B-A3B-shaped Q4_K_M file
# decoded with 2 threads while a balloon leaves FREE bytes of memory
# available, Sluice (expert streaming, O_DIRECT) against llama.cpp (mmap), in
# the same run, alternated, median of REPS. Per free-memory level it also
# measures the O_DIRECT bandwidth of the file twice, before and after its runs
# (the mean is the level's figure), as build/iobench reads it in four ways:
# in order in 1 MiB requests at queue depth QD; in the expert pattern
# (`iobench --experts`: k uniformly drawn experts per layer, each slice one
# read, as a token with no cache hit reads them) into 64 slots; the same
# into as many slots as the engine's expert cache has at that level (`sluice
# plan` under the balloon): the memory the engine's reads land in (on the
# 2026-11 VM 640-800 slots read 0-7% slower than 64); and that again while
# `kbench -t 2 -T CONTEND_TYPE` (mxfp4) streams weights from memory, as the
# engine's compute does while its reads are in flight. It prints Sluice's ms/token
# against the four bounds, bytes-read-per-token / bandwidth, the compute / stall
# split, and the expert-cache hit rate (random weights route uniformly: a
# floor).
#   perf/moe_balloon.sh [MODEL] [FREE...]     default: the 30B file, 4G 2.5G 8G
# Env: REPS (3), N (Sluice decode tokens, 16), WARMUP (1 Sluice run first, not counted),
#   LLAMA_N (8: llama.cpp thrashes),
#   LLAMA (path to llama-completion; empty = skip), LLAMA_REPS (REPS: llama.cpp runs in the
#   first LLAMA_REPS reps only), LLAMA_TIMEOUT (s, 900: then SIGINT, on which llama-completion
#   prints its timings of the tokens so far), LLAMA_FLAGS ("--no-warmup -nr": llama.cpp's
#   warmup runs every expert of every layer, i.e. reads the whole file, before the first
#   token; its CPU repacking copies the Q4_K weights into anonymous memory at load (11 GiB
#   in 270 s under a 4 GiB balloon, no token) - without it the weights stay in the mmap),
#   VARIANTS (Sluice runs per rep, "on off" = --moe-pregate on / off, "-" = no
#   flag, "alt" = the binary ALT_SLUICE with no flag: another build, e.g. the
#   one before a change; "alt2".."alt9": ALT2_SLUICE..ALT9_SLUICE), ALTERNATE (1: every other rep in reverse order),
#   SLUICE_FLAGS (more flags), CONTEND_TYPE (kbench type of the fourth bandwidth, mxfp4),
#   OUT (result dir, /tmp/moe_balloon),
#   LOCK (/work/notes/mem.lock: each level runs under `flock LOCK`, released
#   between levels; empty: the caller holds it). Needs build/sluice, build/balloon, build/iobench, build/kbench (make all).
# Each page-cache copy of MODEL is dropped with posix_fadvise before every run
# (both engines start cold), and each run waits until the level's one balloon
# has re-grown to FREE. Kills only what it started.
set -u
B=${BUILD:-build}
if [ "${1:-}" = __level ]; then
    shift
    MODEL=$1; FREE=$2
    REPS=${REPS:-3}; N=${N:-16}; LLAMA_N=${LLAMA_N:-8}; LLAMA_TIMEOUT=${LLAMA_TIMEOUT:-900}
    LLAMA_REPS=${LLAMA_REPS:-$REPS}
    VARIANTS=${VARIANTS:-on off}; QD=${QD:-16}
    D=$OUT/$FREE
    mkdir -p "$D"
    BAL=; HOG=
    # on exit, the balloon and the contention loop of iob (its flag file first:
    # the loop must not start another kbench once its shell is gone); a signal
    # ends the level (once its foreground command returns) instead of running on
    trap 'rm -f "$D/hog"; [ -n "$HOG" ] && { pkill -P $HOG; kill $HOG; } 2>/dev/null; [ -n "$BAL" ] && kill $BAL 2>/dev/null; wait 2>/dev/null' EXIT
    trap 'exit 130' INT TERM
    evict() { python3 -c "import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)" "$MODEL"; }
    avail() { awk '/^MemAvailable/ {printf "%.2f", $2 / 2^20}' /proc/meminfo; }
    # One balloon for the level, --track: its safety valve gives memory back
    # during a run and it re-grows after; filling ~19 GiB takes minutes on
    # this VM, so it is not made afresh for every run.
    "$B/balloon" --leave "$FREE" --floor 384M --track --ready-fd 3 -q 3>"$D/ready" & BAL=$!
    while [ ! -s "$D/ready" ]; do
        sleep 0.5; kill -0 $BAL 2>/dev/null || { echo "balloon died"; exit 1; }
    done
    # before each run: wait (at most 120 s) until the balloon has re-grown to
    # FREE (+5% and one 64 MiB chunk: its tracking band)
    settle() {
        i=0
        while [ $i -lt 240 ] && ! awk -v f="$FREE" '/^MemAvailable/ {
                u = substr(f, length(f)); v = f + 0; m = u == "G" ? 2^30 : u == "M" ? 2^20 : 1
                exit !($2 * 1024 <= v * m * 1.05 + 96 * 2^20) }' /proc/meminfo; do
            sleep 0.5; i=$((i + 1))
        done
    }
    # peak RSS of a command (GNU time), in GiB
    hwm() { awk '/Maximum resident/ { printf "%.2f", $NF / 2^20 }' "$1"; }
    echo "[$FREE] $(date -u +%H:%M:%S) balloon: $(cat "$D/ready"); MemAvailable $(avail) GiB"
    # the expert cache's slots at this level, as the runs will plan them
    SLOTS=$("$B/sluice" plan -m "$MODEL" ${SLUICE_FLAGS:-} 2>/dev/null | awk '/^expert cache/ { print $3; exit }')
    case "$SLOTS" in ''|*[!0-9]*) SLOTS=64 ;; esac
    echo "$SLOTS" >"$D/slots"
    # an iobench report's GB/s rows (in order: "1024K ..."; --experts: "experts ...")
    rows() { awk '($1 ~ /^[0-9]/ || $1 == "experts") && NF == 5 { print $3 }' "$@"; }
    # expert parts are ~0.9-1.3 MB; one layer's misses are ~15-24 reads in flight
    iob() {   # $1: tag; the in-order and the expert-pattern GB/s
        "$B/iobench" "$MODEL" --req 1M --qd "$QD" --bytes 2G --reps 3 >"$D/iobench_$1.txt" 2>&1
        "$B/iobench" "$MODEL" --experts --qd "$QD" --bytes 2G --reps 3 >"$D/iobench_x$1.txt" 2>&1
        "$B/iobench" "$MODEL" --experts --slots "$SLOTS" --qd "$QD" --bytes 2G --reps 3 >"$D/iobench_s$1.txt" 2>&1
        # the same beside two threads streaming weights from memory, as a decode's
        # matvecs do (kbench CONTEND_TYPE): on the 2026-11 VM the disk loses 5-12% to them
        : >"$D/hog"
        ( while [ -e "$D/hog" ]; do "$B/kbench" -t 2 -r 3 -T "${CONTEND_TYPE:-mxfp4}" >/dev/null 2>&1; done ) & HOG=$!
        sleep 2
        "$B/iobench" "$MODEL" --experts --slots "$SLOTS" --qd "$QD" --bytes 2G --reps 3 >"$D/iobench_c$1.txt" 2>&1
        rm -f "$D/hog"; wait $HOG; HOG=
        echo "[$FREE] O_DIRECT bandwidth $1 (qd $QD): in order, 1 MiB requests" \
            "$(rows "$D/iobench_$1.txt" | head -n1) GB/s;" \
            "expert pattern $(rows "$D/iobench_x$1.txt" | head -n1) GB/s;" \
            "into $SLOTS slots $(rows "$D/iobench_s$1.txt" | head -n1) GB/s;" \
            "the same beside a 2-thread matvec $(rows "$D/iobench_c$1.txt" | head -n1) GB/s"
    }
    iob before
    P="Once upon a time"
    # WARMUP (1): Sluice runs not counted, first after the balloon fills. On a
    # VM the first touch of guest memory the host has not backed (or took back
    # when the balloon of the level before freed it) costs ~1.3 s per GB: the
    # first run's expert slots paid it inside decode (30B-A3B at 8 GiB: 1.7-1.9
    # against 3.5 tok/s the run after; perf/results/2026-11-25-moe-readahead.md)
    w=0
    while [ $w -lt "${WARMUP:-1}" ]; do
        evict; settle
        "$B/sluice" run -m "$MODEL" -p "$P" -n "$N" -t 2 --temp 0 --ignore-eos --json --stats --no-display-prompt \
            ${SLUICE_FLAGS:-} >/dev/null 2>"$D/warmup_$w.err"
        echo "[$FREE] warm-up $w (not counted): $(grep -o '"decode_tok_s":[0-9.]*' "$D/warmup_$w.err")"
        w=$((w + 1))
    done
    r=1
    while [ $r -le "$REPS" ]; do
        order=$VARIANTS
        # ALTERNATE=1: every other rep runs the variants in reverse order
        [ -n "${ALTERNATE:-}" ] && [ $((r % 2)) = 0 ] && order=$(printf '%s\n' $VARIANTS | sed -n '1!G;h;$p')
        for v in $order; do
            flag=; bin=$B/sluice
            case $v in
                -) ;;
                alt) bin=$ALT_SLUICE ;;
                alt[0-9]) eval "bin=\${ALT${v#alt}_SLUICE}" ;;
                *) flag="--moe-pregate $v" ;;
            esac
            evict; settle; a0=$(avail)
            # shellcheck disable=SC2086
            /usr/bin/time -v -o "$D/sluice_${v}_$r.time" "$bin" run -m "$MODEL" -p "$P" -n "$N" -t 2 --temp 0 --ignore-eos --json --stats \
                --no-display-prompt $flag ${SLUICE_FLAGS:-} >"$D/sluice_${v}_$r.out" 2>"$D/sluice_${v}_$r.err"
            rc=$?
            echo "[$FREE] rep $r sluice $v: exit $rc $(grep -o '"decode_tok_s":[0-9.]*' "$D/sluice_${v}_$r.err")" \
                "MemAvailable at start $a0 GiB, peak RSS $(hwm "$D/sluice_${v}_$r.time") GiB"
        done
        if [ -n "${LLAMA:-}" ] && [ -x "$LLAMA" ] && [ $r -le "$LLAMA_REPS" ]; then
            evict; settle; a0=$(avail)
            t0=$(date +%s.%N)
            # shellcheck disable=SC2086
            /usr/bin/time -v -o "$D/llama_$r.time" timeout -s INT -k 60 "$LLAMA_TIMEOUT" "$LLAMA" -m "$MODEL" -p "$P" -n "$LLAMA_N" -t 2 --temp 0 --ignore-eos \
                -no-cnv ${LLAMA_FLAGS---no-warmup -nr} >"$D/llama_$r.out" 2>"$D/llama_$r.err" </dev/null
            rc=$?
            echo "[$FREE] rep $r llama.cpp: exit $rc (MemAvailable at start $a0 GiB, $(echo "$(date +%s.%N) - $t0" | bc | cut -c1-6) s wall," \
                "peak RSS $(hwm "$D/llama_$r.time") GiB) $(grep 'eval time' "$D/llama_$r.err" | grep -v prompt | sed 's/.*(//')"
        fi
        r=$((r + 1))
    done
    iob after
    evict
    kill $BAL 2>/dev/null; wait $BAL 2>/dev/null; BAL=
    mean() { rows "$@" | awk '{ s += $1; n++ } END { if (n) printf "%.3f", s / n }'; }
    mean "$D/iobench_before.txt" "$D/iobench_after.txt" >"$D/bw"
    mean "$D/iobench_xbefore.txt" "$D/iobench_xafter.txt" >"$D/xbw"
    mean "$D/iobench_sbefore.txt" "$D/iobench_safter.txt" >"$D/sbw"
    mean "$D/iobench_cbefore.txt" "$D/iobench_cafter.txt" >"$D/cbw"
    exit 0
fi

MODEL=${1:-$HOME/.cache/sluice/models/synth-qwen3-30b-a3b-q4_k_m.gguf}
[ $# -gt 0 ] && shift
LEVELS=${*:-4G 2.5G 8G}
export OUT=${OUT:-/tmp/moe_balloon} REPS=${REPS:-3} BUILD=$B
LOCK=${LOCK-/work/notes/mem.lock}
mkdir -p "$OUT"
# TABLE_ONLY=1: print the table of an earlier run in OUT
# LOCK= (empty): the caller holds the lock (several levels in one hold)
[ -n "${TABLE_ONLY:-}" ] || for f in $LEVELS; do
    if [ -z "$LOCK" ]; then sh "$0" __level "$MODEL" "$f"; continue; fi
    echo "[$f] waiting for $LOCK ($(date -u +%H:%M:%S))"
    flock "$LOCK" sh "$0" __level "$MODEL" "$f"
done

# the table: medians over the reps of each level
python3 - "$OUT" $LEVELS <<'EOF'
import json, os, re, statistics, sys
out, levels = sys.argv[1], sys.argv[2:]
med = lambda v: statistics.median(v) if v else float('nan')
print("| free | Sluice | tok/s | llama.cpp tok/s | × | GB/s O_DIRECT in order / expert pattern / into the cache's slots "
      "/ the same beside a 2-thread matvec "
      "| MB read/token | ms/token | bound ms in order / experts / slots / beside a matvec "
      "| ratio in order / experts / slots / beside a matvec "
      "| compute ms | stall ms | expert hit | pregate guess | prefetched used |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for lv in levels:
    d = os.path.join(out, lv)
    if not os.path.isdir(d): continue
    def rd(name):
        try: return float(open(os.path.join(d, name)).read())
        except Exception: return float('nan')
    bw, xbw, sbw, cbw, slots = rd("bw"), rd("xbw"), rd("sbw"), rd("cbw"), rd("slots")
    ll = []
    for f in sorted(os.listdir(d)):
        if f.startswith("llama_") and f.endswith(".err"):
            m = re.search(r"^(?!.*prompt).*eval time.*?([0-9.]+) tokens per second", open(os.path.join(d, f)).read(), re.M)
            if m: ll.append(float(m.group(1)))
    lt = med(ll)
    variants = sorted({f.split("_")[1] for f in os.listdir(d) if f.startswith("sluice_") and f.endswith(".err")})
    for v in variants:
        js = []
        for f in sorted(os.listdir(d)):
            if f.startswith("sluice_%s_" % v) and f.endswith(".err"):
                for line in open(os.path.join(d, f)):
                    if line.startswith("{\"mode\""): js.append(json.loads(line))
        if not js: continue
        g = lambda k: med([j[k] for j in js])
        tps, byt = g("decode_tok_s"), g("bytes_read_per_token")
        ms = 1e3 / tps if tps else float('nan')
        bound, xbound, sbound, cbound = (byt / (b * 1e9) * 1e3 for b in (bw, xbw, sbw, cbw))
        pf = med([j["expert_prefetch_used"] / j["expert_prefetched"] for j in js if j.get("expert_prefetched")])
        print("| %s | %s (n=%d) | %.3f [%.3f-%.3f] | %s | %s | %.2f / %.2f / %.2f (%.0f slots) / %.2f | %.0f | %.0f | %.0f / %.0f / %.0f / %.0f | %.2f / %.2f / %.2f / %.2f | %.0f | %.0f | %.3f | %s | %s |" % (
            lv, {"-": "default (pregate on)"}.get(v, "ALT%s_SLUICE" % v[3:] if v.startswith("alt") else "pregate " + v), len(js), tps,
            min(j["decode_tok_s"] for j in js), max(j["decode_tok_s"] for j in js),
            "%.3f (n=%d)" % (lt, len(ll)) if ll else "—", "%.1f" % (tps / lt) if ll else "—", bw, xbw, sbw, slots, cbw,
            byt / 1e6, ms, bound, xbound, sbound, cbound, ms / bound, ms / xbound, ms / sbound, ms / cbound,
            g("compute_ms_per_token"), g("stall_ms_per_token"), g("expert_hit_rate"),
            "%.3f" % g("pregate_accuracy") if any(j.get("pregate_accuracy") for j in js) else "—",
            "%.3f" % pf if pf == pf else "—"))
EOF
