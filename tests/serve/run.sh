#!/bin/sh
# make check: the official openai npm client (tests/serve/client.mjs) against
# `sluice serve` on a free loopback port. Needs node and `npm ci` here (make deps).
set -u
BUILD=${BUILD:-build}
SHARED=${SHARED:-../shared}
dir=$(dirname "$0")
if [ ! -d "$dir/node_modules/openai" ]; then
  echo "serve client test: FAIL: $dir/node_modules missing (run make deps)"; exit 1
fi
out=$(mktemp)
# no --chat-template: the model has none, so the server falls back to ChatML and says so
"$BUILD/sluice" serve -m "$SHARED/models/stories260K.gguf" -c 256 -t 2 --port 0 --api-key test-key \
  > "$out" 2>&1 &
pid=$!
port=
for i in $(seq 1 100); do
  port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out")
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
if [ -z "$port" ]; then
  echo "serve client test: FAIL: server did not start"; cat "$out"; kill $pid 2>/dev/null; rm -f "$out"; exit 1
fi
SLUICE_URL="http://127.0.0.1:$port" SLUICE_KEY=test-key node "$dir/client.mjs"
rc=$?
if grep -q 'has no chat template: using ChatML' "$out" && grep -q 'chat template chatml' "$out"; then
  echo "ok   ChatML fallback logged"
else
  echo "FAIL ChatML fallback not logged:"; cat "$out"; rc=1
fi
kill $pid; wait $pid 2>/dev/null
rm -f "$out"
exit $rc
