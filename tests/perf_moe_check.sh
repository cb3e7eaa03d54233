#!/bin/sh
# perf/moe_balloon.sh's table from repetitions whose medians, bounds and ratios
# are known (TABLE_ONLY: no model is run), and build/iobench's --slots option
# and its --experts pass on a split model.
# Fails on any wrong cell or exit code.
set -eu
B=${BUILD:-build}
SHARED=${SHARED:-$(cd "$(dirname "$0")/../.." && pwd)/shared}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail=0
D=$T/out/4G
mkdir -p "$D"
# GB/s in order / expert pattern / into the cache's 100 slots / the same beside a matvec
echo 3.000 > "$D/bw"; echo 2.500 > "$D/xbw"; echo 2.000 > "$D/sbw"; echo 100 > "$D/slots"; echo 1.000 > "$D/cbw"
i=1
for r in "2 500000000 70 200 0.5" "4 400000000 80 210 0.6" "5 600000000 90 220 0.7"; do
    set -- $r
    printf 'stats line\n{"mode":"stream","decode_tok_s":%s,"bytes_read_per_token":%s,"compute_ms_per_token":%s,"stall_ms_per_token":%s,"expert_hit_rate":%s,"pregate_accuracy":0.8,"expert_prefetched":10,"expert_prefetch_used":9}\n' \
        "$1" "$2" "$3" "$4" "$5" > "$D/sluice_-_$i.err"
    i=$((i + 1))
done
echo "common_perf_print:        eval time =   6000.00 ms /     3 runs   ( 2000.00 ms per token,     0.50 tokens per second)" \
    > "$D/llama_1.err"
OUT=$T/out TABLE_ONLY=1 sh perf/moe_balloon.sh "$T/none.gguf" 4G > "$T/table" 2> "$T/err" ||
    { cat "$T/err"; echo "FAILED: moe_balloon.sh TABLE_ONLY"; exit 1; }
row=$(grep '^| 4G ' "$T/table" || true)
# medians: 4 tok/s = 250 ms/token, 500 MB/token; bounds 500 MB / 3, 2.5, 2, 1 GB/s
for want in "| 4.000 [2.000-5.000] |" "| 0.500 (n=1) | 8.0 |" "| 3.00 / 2.50 / 2.00 (100 slots) / 1.00 |" \
            "| 500 | 250 | 167 / 200 / 250 / 500 | 1.50 / 1.25 / 1.00 / 0.50 |" "| 80 | 210 | 0.600 | 0.800 | 0.900 |"; do
    case "$row" in
        *"$want"*) ;;
        *) echo "FAILED: moe_balloon.sh table: no '$want' in: $row"; fail=1 ;;
    esac
done

# iobench --slots: refused outside 1..65536 and without --experts
if [ -x "$B/iobench" ]; then
    for args in "--experts --slots 0" "--experts --slots 65537" "--experts --slots 3x" "--slots 8"; do
        rc=0
        # shellcheck disable=SC2086
        "$B/iobench" "$T/none.gguf" $args > /dev/null 2> "$T/ioerr" || rc=$?
        if [ $rc != 2 ] || ! grep -q -- "--slots" "$T/ioerr"; then
            echo "FAILED: iobench $args: exit $rc, want 2 and a message naming --slots"; fail=1
        fi
    done
    # a real pass: 3 slots for 4 experts per layer, so reads wait for their slot's last one
    X=$SHARED/models/synth2-qwen3moe-q4_k_m.gguf
    rc=0
    "$B/iobench" "$X" --experts --slots 3 --qd 2 --bytes 4M --reps 1 > "$T/io" 2> "$T/ioerr" || rc=$?
    if [ $rc != 0 ] && grep -q "O_DIRECT refused" "$T/ioerr"; then
        echo "perf_moe_check: iobench --slots pass skipped: O_DIRECT refused on $X"
    elif [ $rc != 0 ] || ! grep -q "into 3 slots" "$T/io" || ! grep -Eq '^ +experts +2 +[0-9.]+' "$T/io"; then
        echo "FAILED: iobench $X --experts --slots 3: exit $rc"; cat "$T/io" "$T/ioerr"; fail=1
    fi
    # a split model: every shard read through its own descriptor (through shard 1's, the
    # reads of the other shards' experts fail); the pass cycles through all 4 layers
    if "$B/sluice" mkmodel --preset qwen3moe-tiny --split-max-size 25M -o "$T/split" > /dev/null 2>&1 &&
        [ -f "$T/split-00003-of-00003.gguf" ]; then
        rc=0
        "$B/iobench" "$T/split-00001-of-00003.gguf" --experts --slots 3 --qd 2 --bytes 8M --reps 1 \
            > "$T/io" 2> "$T/ioerr" || rc=$?
        if [ $rc != 0 ] && grep -q "O_DIRECT refused" "$T/ioerr"; then
            echo "perf_moe_check: iobench split pass skipped: O_DIRECT refused in $T"
        elif [ $rc != 0 ] || ! grep -Eq '^ +experts +2 +[0-9.]+' "$T/io"; then
            echo "FAILED: iobench --experts on a 3-file split: exit $rc"; cat "$T/io" "$T/ioerr"; fail=1
        fi
    else
        echo "FAILED: mkmodel --preset qwen3moe-tiny --split-max-size 25M did not write 3 files"; fail=1
    fi
else
    echo "FAILED: $B/iobench not built"; fail=1
fi
[ $fail = 0 ] && echo "perf_moe_check: ok"
exit $fail
