#!/bin/sh
# The bindings' tests, run by `make check` after the Criterion suite: the Java program on the
# host JVM through build/libsluice_jni.so, the Python script through ctypes, and the Python
# package pip-installed in a fresh venv (pip_check.sh). Each ends with "jni: ...",
# "python: N passed, M failed", "pip check: ..."; this exits 1 if any failed. Environment from the
# Makefile: BUILD, SAN (sanitizer flags of the build), SHARED, JAVA, PYTHON.
set -u
BUILD=${BUILD:-build}
SAN=${SAN:-}
MODEL=${SHARED:-../shared}/models/stories260K.gguf
JAVA=${JAVA:-java}
PYTHON=${PYTHON:-python3}
fail=0
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

echo "== tests/bind/JniTest.java"
if [ -n "$SAN" ]; then
    # a JVM would need libasan preloaded before its own start-up: not worth the noise
    echo "jni: skipped under the sanitizers (the JVM would need LD_PRELOAD of libasan)"
else
    "$JAVA" -Dsluice.jni="$PWD/$BUILD/libsluice_jni.so" -cp "$BUILD/java/test:$BUILD/sluice.jar" \
        JniTest "$MODEL" "$BUILD/sluice" || fail=1
fi

echo "== tests/bind/test_python.py"
if [ -n "$SAN" ]; then
    # the interpreter is not instrumented: preload the runtime, and its own leaks are not ours
    asan=$(${CC:-cc} -print-file-name=libasan.so)
    LD_PRELOAD=$asan ASAN_OPTIONS=detect_leaks=0 SLUICE_LIB="$BUILD/libsluice.so" \
        "$PYTHON" tests/bind/test_python.py "$MODEL" "$BUILD/sluice" || fail=1
else
    SLUICE_LIB="$BUILD/libsluice.so" "$PYTHON" tests/bind/test_python.py "$MODEL" "$BUILD/sluice" || fail=1
fi
echo "== tests/bind/pip_check.sh"
BUILD="$BUILD" SAN="$SAN" PYTHON="$PYTHON" sh tests/bind/pip_check.sh || fail=1
exit $fail
