#!/bin/sh
# The ring on this machine: the 8B Q4_K_M (4.92 GB) under 4 GiB in all, as
#   4 ranks x 1 GiB (windows planned from vm_4x1g.json), 2 ranks x 2 GiB (vm_2x2g.json),
#   1 process with --mem-budget 4G, and llama.cpp (mmap) with 4 GiB free (build/balloon),
# alternating, REPS rounds; ms per decode token of each run, then the per-rank breakdown of
# the last ring runs (--stats). Memory-heavy: run it under `flock /work/notes/mem.lock`.
# Usage: perf/ring/run_8b.sh [OUT_DIR]   (env: MODEL, N tokens, REPS, BUILD, LLAMA_BIN)
set -u
BUILD=${BUILD:-build}
MODEL=${MODEL:-$HOME/.cache/sluice/models/synth-8b-q4_k_m.gguf}
LLAMA_BIN=${LLAMA_BIN:-/work/llama/build/bin}
N=${N:-8} REPS=${REPS:-3}
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT"
S=$BUILD/sluice
P="Once upon a time"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_plm_rsh_agent=false
export OMPI_MCA_pml=ob1 OMPI_MCA_mpi_yield_when_idle=1
# page cache out of the picture (sluice reads O_DIRECT; llama.cpp's mmap would keep pages)
evict() { python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$MODEL"; }
ms_sluice() { sed -n 's/.*decode: \([0-9]*\) tokens in \([0-9.]*\) ms.*/\1 \2/p' "$1" | awk '$1 > 0 { printf "%.1f", $2 / $1 }'; }
ms_llama() { awk '/eval time/ && !/prompt/ { for (i=1;i<=NF;i++) if ($i=="ms" && $(i+1)=="per") { print $(i-1); exit } }' "$1"; }
for r in $(seq 1 "$REPS"); do
    evict
    mpirun -np 4 "$S" run --ring perf/ring/vm_4x1g.json -m "$MODEL" -p "$P" -n "$N" --temp 0 -t 1 -c 512 \
        --ring-budgets 1G,1G,1G,1G --stats --ring-timeout 600 > "$OUT/np4.$r.out" 2> "$OUT/np4.$r.err"
    evict
    mpirun -np 2 "$S" run --ring perf/ring/vm_2x2g.json -m "$MODEL" -p "$P" -n "$N" --temp 0 -t 1 -c 512 \
        --ring-budgets 2G,2G --stats --ring-timeout 600 > "$OUT/np2.$r.out" 2> "$OUT/np2.$r.err"
    evict
    "$S" run -m "$MODEL" -p "$P" -n "$N" --temp 0 -t 2 -c 512 --mem-budget 4G --stats \
        > "$OUT/one.$r.out" 2> "$OUT/one.$r.err"
    evict
    "$BUILD/balloon" -q --leave 4G -- "$LLAMA_BIN/llama-completion" -m "$MODEL" -p "$P" -n "$N" --temp 0 -t 2 \
        -c 512 -no-cnv > "$OUT/llama.$r.out" 2> "$OUT/llama.$r.err" < /dev/null
    printf 'rep %s: np4 %s ms, np2 %s ms, one %s ms, llama.cpp %s ms per token\n' "$r" \
        "$(ms_sluice "$OUT/np4.$r.err")" "$(ms_sluice "$OUT/np2.$r.err")" "$(ms_sluice "$OUT/one.$r.err")" \
        "$(ms_llama "$OUT/llama.$r.err")"
done
echo "--- last 4-rank run:"; grep '^ring' "$OUT/np4.$REPS.err"
echo "--- last 2-rank run:"; grep '^ring' "$OUT/np2.$REPS.err"
echo "--- last one-process run:"; grep '^stats\|^prompt' "$OUT/one.$REPS.err"
echo "outputs in $OUT"
