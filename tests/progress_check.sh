#!/bin/sh
# The progress display of long work (engine/cli/cli_progress.c), run by `make check`: on a
# terminal (a pty from script(1)) mkmodel, a resident load, a bench sweep and profile draw
# one line redrawn in place with a rate and an ETA, and clear it; with stderr not a terminal,
# or with --quiet, nothing of it appears; `run --json` gives JSON progress events instead.
# Ends with "progress check: PASS" or "progress check: FAIL: why". Environment: BUILD, SHARED.
set -u
BUILD=${BUILD:-build}
SL=$PWD/$BUILD/sluice
MODEL=$(cd "${SHARED:-../shared}/models" && pwd)/stories260K.gguf
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-progress-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM HUP
fail() { echo "progress check: FAIL: $*"; exit 1; }
command -v script >/dev/null || fail "script(1) not found (util-linux / bsdutils)"
# on a pty: script's output has the terminal's bytes (stdout and stderr both)
tty_run() { script -qec "$*" /dev/null > "$tmp/tty" 2>&1 < /dev/null; }
# a line redrawn in place (\r, erase to the end), with a rate and an ETA, then cleared
drawn() {
    grep -aq "$(printf '\r')$(printf '\033')\[K$1 \[" "$tmp/tty" && grep -aq "ETA [0-9]*s" "$tmp/tty" ||
        { tr '\r' '\n' < "$tmp/tty" | tail -n 5; fail "$2: no progress line on a terminal"; }
}
none() {   # none FILE WHAT: no trace of the line
    ! grep -aq "$(printf '\033')\[K\|ETA [0-9]" "$1" || { cat "$1"; fail "$2: a progress line where none belongs"; }
}

tty_run "$SL" mkmodel --preset tiny -o "$tmp/m.gguf"
drawn "mkmodel: writing" "mkmodel"
grep -aq "MB/s ETA" "$tmp/tty" || fail "mkmodel: no rate"
"$SL" mkmodel --preset tiny -o "$tmp/m.gguf" 2> "$tmp/err" || fail "mkmodel"
none "$tmp/err" "mkmodel, stderr a file"
tty_run "$SL" mkmodel --preset tiny -o "$tmp/m.gguf" --quiet
none "$tmp/tty" "mkmodel --quiet"
grep -aq "mkmodel: wrote" "$tmp/tty" || fail "mkmodel --quiet: the summary line is gone too"

run="run -m $MODEL -p Once -n 4 --temp 0 -c 64 --mode resident"
tty_run "$SL" $run
drawn "sluice run: loading" "resident load"
"$SL" $run 2> "$tmp/err" > /dev/null || fail "sluice run"
none "$tmp/err" "resident load, stderr a file"
tty_run "$SL" $run --quiet
none "$tmp/tty" "resident load --quiet"
"$SL" $run --json 2> "$tmp/err" > /dev/null || fail "sluice run --json"
grep -q '^{"event":"progress","what":"sluice run: loading","unit":"bytes",.*"final":true}$' "$tmp/err" ||
    { cat "$tmp/err"; fail "run --json: no final JSON progress event"; }
"$SL" run -m "$MODEL" -p Once -n 4 -c 64 --mode stream --json 2> "$tmp/err" > /dev/null
! grep -q '"event":"progress"' "$tmp/err" || fail "run --json: progress events for a streamed model (nothing is loaded)"

tty_run "$SL" bench -m "$MODEL" --mode resident,stream -r 2 -p 4 -n 4 -t 1
drawn "bench: sweep" "bench"
grep -aq "4/4 " "$tmp/tty" || { tr '\r' '\n' < "$tmp/tty" | tail; fail "bench: the sweep's count never reached 4/4"; }
"$SL" bench -m "$MODEL" --mode resident -r 1 -p 4 -n 4 -t 1 2> "$tmp/err" > /dev/null || fail "bench"
none "$tmp/err" "bench, stderr a file"

tty_run "$SL" profile -m "$MODEL" --seconds 3 -t 1 -o "$tmp/profile.json"
drawn "profile: measuring" "profile"
"$SL" profile -m "$MODEL" --seconds 3 -t 1 -o "$tmp/profile.json" --quiet > "$tmp/out" 2> "$tmp/err" ||
    fail "profile"
none "$tmp/err" "profile --quiet"
grep -q "^| 4096 KiB |" "$tmp/out" || { cat "$tmp/out"; fail "profile: the disk table rows"; }
echo "progress check: PASS (mkmodel, resident load, bench sweep, profile: a line on a terminal;" \
     "none when stderr is a file or with --quiet; JSON events with run --json)"
