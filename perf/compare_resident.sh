#!/bin/sh
# Resident speed only, Sluice vs llama.cpp, for one or more models: the resident
# block of perf/compare_llamacpp.sh (which measures it; see there), no balloon.
#
#   LLAMA_CPP_BIN=/path/to/llama.cpp/build/bin perf/compare_resident.sh MODEL...
#   env: THREADS (2), P (prompt tokens, 64; a list such as 64,512 works), N (generated, 32),
#        ROUNDS (5), LLAMA_MMAP (1; 0 = llama-bench -mmp 0, for a model that fits in RAM
#        once but not twice), LLAMA_CPP_NAME, BUILD
set -eu
[ -n "${LLAMA_CPP_BIN:-}" ] || { echo "compare_resident.sh: set LLAMA_CPP_BIN to a llama.cpp build dir" >&2; exit 2; }
[ $# -ge 1 ] || { echo "usage: LLAMA_CPP_BIN=DIR $0 MODEL..." >&2; exit 2; }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
for MODEL in "$@"; do
    echo "## $(basename "$MODEL")"
    FREE= RESIDENT=1 PP=${P:-64} N_RES=${N:-32} REPS=${ROUNDS:-5} OUT="$TMP/$(basename "$MODEL")" \
        "$(dirname "$0")/compare_llamacpp.sh" "$MODEL"
    echo
done
