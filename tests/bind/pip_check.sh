#!/bin/sh
# The Python package as a user installs it (README "Python"), run by tests/bind/check.sh:
# in a fresh virtual environment with no package index (--no-index: PyPI is never asked),
#  1. `pip install engine/bindings/python` (the wheel bundles $BUILD's libsluice), then the
#     README's examples: quickstart.py prints what `sluice run --temp 0` prints, chat.py
#     returns the OpenAI shape and its stream is the same text in pieces;
#  2. `pip wheel` without a bundled library, installed over it, finds the library of
#     `make install PREFIX=...` through pkg-config, and prints the same text again.
# Ends with "pip check: PASS" or "pip check: FAIL: why". Environment: BUILD, SHARED, PYTHON,
# SAN/CC (sanitizer builds: the interpreter gets the runtime preloaded), MAKE.
set -u
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-python3}
MAKE=${MAKE:-make}
MODEL=$(cd "${SHARED:-../shared}/models" && pwd)/stories260K.gguf
EX=$PWD/engine/bindings/python/examples
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-pip-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM HUP
fail() { echo "pip check: FAIL: $*"; exit 1; }
run_log() {   # run_log WHAT CMD...: output in $tmp/log, shown on failure
    what=$1; shift
    "$@" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "$what"; }
}
unset SLUICE_LIB PYTHONPATH
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
if [ -n "${SAN:-}" ]; then
    LD_PRELOAD=$(${CC:-cc} -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0
    export ASAN_OPTIONS
fi
py() { ( cd "$tmp" && LD_PRELOAD=${LD_PRELOAD:-} "$tmp/venv/bin/python" "$@" ); }

run_log "python3 -m venv (make deps installs python3-venv)" "$PYTHON" -m venv "$tmp/venv"
lib=$(ls "$PWD/$BUILD"/libsluice.so.[0-9]* | head -n1)
run_log "pip install engine/bindings/python" env SLUICE_BUNDLE_LIB="$lib" \
    "$tmp/venv/bin/pip" install --no-index engine/bindings/python
left=$(find engine/bindings/python -name build -o -name '*.egg-info' -o -name __pycache__ -o -name '*.whl')
[ -z "$left" ] || fail "the build left files in engine/bindings/python: $left"

"$BUILD/sluice" run -m "$MODEL" -p "Once upon a time" -n 32 --temp 0 -c 256 -t 1 --no-display-prompt \
    >"$tmp/want" 2>/dev/null || fail "sluice run"
run_log "examples/quickstart.py" py "$EX/quickstart.py" "$MODEL"
cmp -s "$tmp/log" "$tmp/want" || { diff "$tmp/want" "$tmp/log"; fail "quickstart.py differs from sluice run"; }
echo "quickstart.py = sluice run: $(head -c 60 "$tmp/want")..."
py -c 'import sluice, os; p = sluice._lib.lib._name; print(p); assert os.path.dirname(p) == os.path.dirname(sluice.__file__), p' \
    >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "the installed package does not load its bundled libsluice"; }

run_log "examples/chat.py" py "$EX/chat.py" "$MODEL"
py - "$tmp/log" <<'PY' || fail "chat.py: not the OpenAI shape, or the stream differs"
import json, sys
out = open(sys.argv[1]).read()
body, stream = out[out.index("{"):out.rindex("}") + 1], out[out.rindex("}") + 1:].strip("\n")
assert "using ChatML" in out, "the ChatML fallback is not logged"
r = json.loads(body)
assert r["object"] == "chat.completion" and r["id"].startswith("chatcmpl-"), r
c = r["choices"][0]
assert c["message"]["role"] == "assistant" and c["finish_reason"] in ("stop", "length"), c
assert set(r["usage"]) >= {"prompt_tokens", "completion_tokens", "total_tokens"}, r["usage"]
pieces = stream.split("|")
assert "".join(pieces) == c["message"]["content"], (pieces, c["message"]["content"])
assert len([p for p in pieces if p]) > 5, pieces
print("chat.py: chat.completion, %d stream pieces = the message" % len(pieces))
PY

# 2. a wheel without the library, the library from `make install` found through pkg-config
run_log "make install PREFIX=$tmp/prefix" $MAKE --no-print-directory install PREFIX="$tmp/prefix"
mkdir "$tmp/wheels"
run_log "pip wheel" env SLUICE_BUNDLE_LIB= "$tmp/venv/bin/pip" wheel --no-index -w "$tmp/wheels" engine/bindings/python
ls "$tmp"/wheels/sluice-*-py3-none-any.whl >/dev/null 2>&1 || fail "pip wheel: no py3-none-any wheel: $(ls "$tmp/wheels")"
run_log "pip install the wheel" "$tmp/venv/bin/pip" install --no-index --force-reinstall "$tmp"/wheels/sluice-*.whl
PKG_CONFIG_PATH=$tmp/prefix/lib/pkgconfig
export PKG_CONFIG_PATH
run_log "quickstart.py on the installed library" py "$EX/quickstart.py" "$MODEL"
cmp -s "$tmp/log" "$tmp/want" || fail "quickstart.py (pkg-config's libsluice) differs from sluice run"
py -c 'import sluice; print(sluice._lib.lib._name)' >"$tmp/log" 2>&1
grep -q "^$tmp/prefix/lib/libsluice.so" "$tmp/log" || { cat "$tmp/log"; fail "not the library of make install"; }
echo "pip check: PASS (fresh venv, no index: pip install of the folder with libsluice bundled, and a" \
     "py3-none-any wheel finding make install's libsluice through pkg-config; README examples run)"
