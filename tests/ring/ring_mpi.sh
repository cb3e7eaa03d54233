#!/bin/sh
# mpirun on loopback for the ring's MPI parts (called by tests/ring/test_ring_mpi.c, one case
# per call): works as root and in a container without a network (shared-memory transport,
# loopback only, no ssh). Usage: ring_mpi.sh BUILD SHARED CASE [N]; exit 0 = the case held.
#   collect N  `mpirun -np N sluice ring-profile` writes a cluster.json of N devices that
#              `sluice plan --ring ... -m MODEL` plans
#   missing    one rank has no profile: every rank ends, rank 0 names it, nothing is written
#   dies       one rank is killed: the run ends (no hang) with a non-zero status
# `sluice run --ring` (the runtime):
#   same N MODEL SPEC [FLAGS..]  (MODEL: a name in SHARED/models, without .gguf)  rank 0's greedy text equals a single-process `sluice run`
#              of the same model and prompt (same -b chunks: the prompt takes several)
#              (SPEC auto: every rank's profile gathered over MPI, the windows planned)
#   streams N MODEL SPEC [FLAGS..]  as same, and some rank read weights while decoding
#   rankdies   rank 2 of 4 aborts mid-run: every rank ends, non-zero, no hang, the rank named
#   rankhangs  rank 1 of 2 stops answering: the others' watchdog ends the run
#   nomodel    the model file is missing on rank 1: both end with rank 1's message
set -u
BUILD=$1 SHARED=$2 CASE=$3 N=${4:-2}
S=$BUILD/sluice
MODEL=$SHARED/models/stories260K.gguf
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_plm_rsh_agent=false
export OMPI_MCA_pml=ob1 OMPI_MCA_mpi_yield_when_idle=1
# Open MPI keeps allocations until exit: leak reports would be its, not ours (make asan).
export ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sl-ring-mpi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM HUP
fail() { echo "ring_mpi $CASE: FAIL: $*"; cat "$tmp/out" 2>/dev/null; exit 1; }
printf '{"disk_bytes_per_s": 1.5e9, "mem_bytes_per_s": 1e10, "matvec": {"q8_0": 8e9, "q4_K": 8e9, "f32": 4e9}}\n' > "$tmp/p.json"

case $CASE in
collect)
    timeout 120 mpirun -np "$N" "$S" ring-profile --profile "$tmp/p.json" --mem-budget 64M \
        -o "$tmp/c.json" --timeout 60 > "$tmp/out" 2>&1 || fail "mpirun -np $N exited $?"
    grep -q "cluster saved to" "$tmp/out" || fail "no 'cluster saved'"
    got=$(grep -c '"mem_budget_bytes": 67108864' "$tmp/c.json")
    [ "$got" = "$N" ] || fail "$got devices with the 64M budget in cluster.json, expected $N"
    if [ "$N" -gt 1 ]; then grep -q '"link"' "$tmp/c.json" || fail "no link measured"; fi
    "$S" plan --ring "$tmp/c.json" -m "$MODEL" -c 64 > "$tmp/out" 2>&1 || fail "plan --ring rejects the cluster"
    grep -q "^chosen " "$tmp/out" || fail "plan printed no choice"
    ;;
missing)
    timeout 120 mpirun -np 1 "$S" ring-profile --profile "$tmp/p.json" -o "$tmp/c.json" --timeout 60 : \
        -np 1 "$S" ring-profile --profile "$tmp/none.json" -o "$tmp/c.json" --timeout 60 > "$tmp/out" 2>&1
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "exit $rc (expected a failure, not a timeout)"
    grep -q "rank 1 (.*none.json" "$tmp/out" || fail "rank 0 did not name rank 1's missing profile"
    [ ! -e "$tmp/c.json" ] || fail "cluster.json written although a rank failed"
    ;;
dies)
    t0=$(date +%s)
    timeout 120 mpirun -np 1 "$S" ring-profile --profile "$tmp/p.json" -o "$tmp/c.json" --timeout 20 : \
        -np 1 sh -c 'kill -9 $$' > "$tmp/out" 2>&1
    rc=$?
    t=$(( $(date +%s) - t0 ))
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "exit $rc (expected a failure, not a hang)"
    [ ! -e "$tmp/c.json" ] || fail "cluster.json written although a rank died"
    echo "ring_mpi dies: ended with $rc after ${t}s"
    ;;
same|streams)
    M=$SHARED/models/$5.gguf SPEC=$6
    shift 6
    SAVED="$*"
    PROMPT="Once upon a time there was a little"
    # the single process takes the same flags but the ring's own (--ring-budgets B)
    REF=
    while [ $# -gt 0 ]; do
        case $1 in --ring-*) shift 2 ;; *) REF="$REF $1"; shift ;; esac
    done
    set -- $SAVED
    "$S" run -m "$M" -p "$PROMPT" -n 10 --temp 0 -t 1 -b 3 $REF > "$tmp/ref" 2>/dev/null || fail "single-process run"
    if [ "$SPEC" = auto ]; then   # each rank's profile gathered over MPI, windows from the ILPs
        printf '{"disk_bytes_per_s": 1.5e9, "mem_bytes_per_s": 1e10, "matvec": {"q4_K": 8e9, "q6_K": 8e9, "q8_0": 8e9, "f32": 4e9}}\n' > "$tmp/a.json"
        set -- "$@" --ring-profile "$tmp/a.json"
    fi
    timeout 100 mpirun -np "$N" "$S" run --ring "$SPEC" -m "$M" -p "$PROMPT" -n 10 --temp 0 -t 1 -b 3 \
        --ring-timeout 30 --stats "$@" > "$tmp/got" 2> "$tmp/out" || fail "mpirun -np $N exited $?"
    cmp -s "$tmp/ref" "$tmp/got" || { diff "$tmp/ref" "$tmp/got"; fail "-np $N --ring $SPEC: tokens differ"; }
    grep -q "^ring: rank $((N - 1)) per decode token" "$tmp/out" || fail "no per-rank figures"
    if [ "$CASE" = streams ]; then
        grep "per decode token" "$tmp/out" | grep -qv "read 0.0 MB" || fail "no rank read weights while decoding"
    fi
    N="$N $(basename "$M") $SPEC"
    ;;
rankdies|rankhangs)
    M=$SHARED/models/synth2-qwen3-q4_k_m.gguf
    if [ "$CASE" = rankdies ]; then NP=4 SPEC=1,1,1,1 F=2:3; else NP=2 SPEC=1,1 F=1:3:hang; fi
    t0=$(date +%s)
    SLUICE_RING_FAIL=$F timeout 100 mpirun -np $NP "$S" run --ring $SPEC -m "$M" -p "Once upon a time" \
        -n 20 --temp 0 -t 1 --ring-timeout 5 > "$tmp/out" 2>&1
    rc=$?
    t=$(( $(date +%s) - t0 ))
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "exit $rc (expected a failure, not a hang)"
    [ $t -lt 60 ] || fail "took ${t}s"
    grep -q "rank ${F%%:*}: SLUICE_RING_FAIL" "$tmp/out" || fail "the failing rank is not named"
    if [ "$CASE" = rankhangs ]; then grep -q "timed out waiting for" "$tmp/out" || fail "no watchdog message"; fi
    echo "ring_mpi $CASE: ended with $rc after ${t}s"
    ;;
nomodel)
    M=$SHARED/models/synth2-qwen3-q4_k_m.gguf
    timeout 100 mpirun -np 1 "$S" run --ring 2,2 -m "$M" -p "Once" -n 4 -t 1 --ring-timeout 30 : \
        -np 1 "$S" run --ring 2,2 -m "$tmp/none.gguf" -p "Once" -n 4 -t 1 --ring-timeout 30 > "$tmp/out" 2>&1
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "exit $rc (expected a failure, not a timeout)"
    grep -q "rank 1: .*none.gguf" "$tmp/out" || fail "rank 0 did not name rank 1's missing model"
    ;;
*) echo "ring_mpi.sh: unknown case $CASE"; exit 2 ;;
esac
echo "ring_mpi $CASE $N: ok"
