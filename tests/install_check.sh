#!/bin/sh
# What an embedder gets from `make install` (README "Library"), run by `make check`:
#  1. `make install PREFIX=<tmp>` (and DESTDIR staging) lays out bin/, lib/, headers, sluice.pc;
#  2. the README's Library example (cut out of README.md, so the two cannot drift) and every
#     io/examples/*.c compile warning-free and link against the INSTALLED headers and library
#     only (pkg-config through PKG_CONFIG_PATH), shared and --static, and run on a model;
#  3. libsluice.so exports exactly the functions the installed headers mark SL_API, and every
#     function those headers declare (static inline wrappers aside) is marked SL_API;
#  4. the headers compile as C++ and give C linkage (C++ runtimes embed the streamer).
# Ends with one line: "install check: PASS ..." or "install check: FAIL: why". Needs no root;
# works in a temporary folder it removes. Called by the Makefile with MAKE, CC, SAN (the
# sanitizer flags of the build: the test programs need them too) and SHARED in the environment.
set -eu

MAKE=${MAKE:-make}
CC=${CC:-cc}
SAN=${SAN:-}
SHARED=${SHARED:-../shared}
MODEL=$SHARED/models/stories260K.gguf

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-install-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM HUP
fail() { echo "install check: FAIL: $*"; exit 1; }
run_log() {   # run_log WHAT CMD...: output kept in $tmp/log, shown on failure
    what=$1; shift
    "$@" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "$what"; }
}

[ -f "$MODEL" ] || fail "model $MODEL not found (SHARED=$SHARED)"
command -v pkg-config >/dev/null || fail "pkg-config not installed (make deps)"

# ---- 1. install ------------------------------------------------------------
prefix=$tmp/prefix
run_log "make install PREFIX=$prefix" $MAKE --no-print-directory install PREFIX="$prefix"
run_log "make install DESTDIR" $MAKE --no-print-directory install DESTDIR="$tmp/stage" PREFIX=/opt/sluice
for f in bin/sluice lib/libsluice.a lib/libsluice.so lib/pkgconfig/sluice.pc include/sluice/sluice.h; do
    [ -e "$tmp/stage/opt/sluice/$f" ] || fail "DESTDIR install: $f missing"
done
grep -q '^prefix=/opt/sluice$' "$tmp/stage/opt/sluice/lib/pkgconfig/sluice.pc" ||
    fail "DESTDIR install: sluice.pc does not say prefix=/opt/sluice"
inc=$prefix/include/sluice
lib=$prefix/lib
PKG_CONFIG_PATH=$lib/pkgconfig
export PKG_CONFIG_PATH
pkg-config --exists sluice || fail "pkg-config does not find sluice.pc in $lib/pkgconfig"
cflags=$(pkg-config --cflags sluice)
case "$cflags" in *"$inc"*) ;; *) fail "pkg-config --cflags gives '$cflags', not $inc" ;; esac

# ---- 2. programs against the installed tree only ---------------------------
mkdir "$tmp/src"
awk '/^### Library/ { lib = 1 } lib && /^```c/ { code = 1; next } code && /^```/ { exit } code' \
    README.md > "$tmp/src/readme_example.c"
[ -s "$tmp/src/readme_example.c" ] || fail "no \`\`\`c block under '### Library' in README.md"
cp io/examples/*.c "$tmp/src/"

# Static: fully static (-static) as the README says; a sanitizer runtime cannot be, so
# there libsluice.a is named instead of -lsluice (the rest of Libs.private still used).
if [ -z "$SAN" ]; then
    static_libs="-static $(pkg-config --libs --static sluice)"
else
    static_libs=$(pkg-config --libs --static sluice | sed 's/-lsluice\b/-l:libsluice.a/')
fi
n_prog=0
for src in "$tmp"/src/*.c; do
    name=$(basename "$src" .c)
    # shellcheck disable=SC2086
    run_log "$name: compile+link (shared)" $CC -std=c11 -Wall -Wextra -Werror $SAN -o "$tmp/$name.shared" \
        "$src" $(pkg-config --cflags --libs sluice) -Wl,-rpath,"$lib"
    # shellcheck disable=SC2086
    run_log "$name: compile+link (--static)" $CC -std=c11 -Wall -Wextra -Werror $SAN -o "$tmp/$name.static" \
        "$src" $(pkg-config --cflags sluice) $static_libs
    readelf -d "$tmp/$name.shared" | grep -q 'NEEDED.*\[libsluice\.so\.[0-9]*\]' ||
        fail "$name.shared does not load libsluice.so.<SONAME>"
    ! readelf -d "$tmp/$name.static" | grep -q 'NEEDED.*libsluice' ||
        fail "$name.static still loads libsluice.so"
    for kind in shared static; do
        run_log "$name.$kind $MODEL" "$tmp/$name.$kind" "$MODEL"
        [ -s "$tmp/log" ] || fail "$name.$kind printed nothing"
        if [ "$kind" = shared ]; then
            # the one loaded is the installed one, found through the rpath
            LD_DEBUG=libs "$tmp/$name.shared" "$MODEL" 2>&1 >/dev/null |
                grep -q "calling init: $lib/libsluice.so" || fail "$name.shared did not load $lib/libsluice.so"
        fi
    done
    n_prog=$((n_prog + 1))
done

# ---- 3. exports = SL_API declarations = every declared function ------------
# Declarations marked SL_API in the installed headers (comments stripped first).
cat "$inc"/*.h | tr '\n' ' ' | sed 's:/\*[^*]*\*\+\([^/*][^*]*\*\+\)*/: :g' |
    grep -o 'SL_API [^;{(]*(' | sed -n 's/.*[^A-Za-z0-9_]\(sl_[A-Za-z0-9_]*\) *($/\1/p' |
    sort -u > "$tmp/marked"
# What the shared library exports (sanitizer builds add their own bookkeeping symbols).
nm -D --defined-only "$lib/libsluice.so" | awk '{ print $NF }' | grep -v '^__\(odr_\)\?asan' |
    sort -u > "$tmp/exported"
if ! cmp -s "$tmp/marked" "$tmp/exported"; then
    echo "exported, not marked SL_API in the installed headers:"; comm -13 "$tmp/marked" "$tmp/exported"
    echo "marked SL_API, not exported:"; comm -23 "$tmp/marked" "$tmp/exported"
    fail "libsluice.so exports differ from the SL_API declarations"
fi
# Every function the installed headers declare, from gcc's own prototype listing
# (-aux-info); static inline wrappers are not library symbols.
if command -v gcc >/dev/null; then
    printf '#include "%s"\n' $(cd "$inc" && ls *.h) > "$tmp/all.c"
    gcc -std=c11 -fsyntax-only -aux-info "$tmp/aux" -I"$inc" "$tmp/all.c" ||
        fail "the installed headers do not compile on their own"
    grep "^/\* $inc/" "$tmp/aux" | grep -v '\*/ static ' | sed 's/ (.*//; s/.*[ *]//' |
        sort -u > "$tmp/declared"
    if ! cmp -s "$tmp/declared" "$tmp/marked"; then
        echo "declared without SL_API:"; comm -23 "$tmp/declared" "$tmp/marked"
        fail "a function in the installed headers is not marked SL_API"
    fi
fi
grep -q 'sl_err_set' "$inc"/*.h && fail "library-internal sl_err_* declared in an installed header"
# C++ embedders: the headers compile as C++ and declare C linkage.
if command -v c++ >/dev/null; then
    printf '#include "%s"\n' $(cd "$inc" && ls *.h) > "$tmp/all.cc"
    cat >> "$tmp/all.cc" <<'EOF'
int main()
{
    sl_model_params mp;
    sl_model_params_init(&mp);   /* one call per header: a C++-mangled name would not link */
    return !(sl_version_number() == SLUICE_VERSION_NUMBER && sl_strerror(SL_EINVAL)[0] &&
             sl_gguf_type_name(SL_GGML_Q4_K) && sl_stream_open_errmsg() && mp.max_pinned == -1);
}
EOF
    # shellcheck disable=SC2086
    run_log "the installed headers as C++" c++ -Wall -Wextra -Werror $SAN -o "$tmp/cxx" "$tmp/all.cc" \
        $(pkg-config --cflags --libs sluice) -Wl,-rpath,"$lib"
    run_log "a C++ program calling the library" "$tmp/cxx"
fi

echo "install check: PASS ($(wc -l < "$tmp/exported") exported symbols = SL_API declarations;" \
     "$n_prog programs built against $prefix, shared and static, and run; headers fine as C++)"
