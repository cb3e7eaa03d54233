#!/bin/sh
# Time to first token through `sluice serve` of a request whose ~1000-token
# prompt shares all but its last line with the previous request's, with the
# server's prefix reuse vs without ("cache_prompt": false on the request, so
# both run on one server), alternating A/B, medians.
#   perf/serve_prefix.sh MODEL [REPS] [SLUICE] [serve options...]
# A request streams (temperature 0, 4 tokens); TTFT = request sent -> first
# content chunk, measured by the client. Each request ends with a different
# line, so at most the shared part is reused (rounded down to whole n_batch
# chunks: engine/session.c). Prints one line per run, the cached_tokens the
# server reported, and the medians.
set -eu
MODEL=${1:?usage: perf/serve_prefix.sh MODEL [REPS] [SLUICE] [serve options...]}
shift
REPS=${1:-3}; [ $# -gt 0 ] && shift
SLUICE=${1:-build/sluice}; [ $# -gt 0 ] && shift
TMP=${TMPDIR:-/tmp}/sl_sp_bench.$$
mkdir -p "$TMP"
"$SLUICE" serve -m "$MODEL" -c 1200 -t 2 --port 0 --parallel 2 "$@" >"$TMP/srv.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$TMP"' EXIT
port=
for i in $(seq 1 600); do
  port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$TMP/srv.log")
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || { cat "$TMP/srv.log"; exit 1; }
  sleep 0.5
done
[ -n "$port" ] || { echo "server did not start"; cat "$TMP/srv.log"; exit 1; }
head -n1 "$TMP/srv.log"
python3 - "$port" "$REPS" <<'EOF'
import http.client, json, sys, time, statistics
port, reps = int(sys.argv[1]), int(sys.argv[2])
# ~1000 tokens of varied text (numbers keep the BPE from collapsing repeats),
# the same as perf/prompt_cache.sh's
shared = "".join(f" Step {i} of the plan: the river rises, {i * 37 % 101} boats wait." for i in range(60))
def req(tail, cache):
    body = json.dumps({"prompt": shared + tail, "max_tokens": 4, "temperature": 0, "stream": True,
                       "cache_prompt": cache})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    t0 = time.monotonic()
    c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200: sys.exit(f"HTTP {r.status}: {r.read().decode()}")
    ttft = None
    for line in r:
        if ttft is None and line.startswith(b"data: {"):
            ttft = time.monotonic() - t0
    c.close()
    return ttft
def metric(name):
    c = http.client.HTTPConnection("127.0.0.1", port)
    c.request("GET", "/metrics")
    t = c.getresponse().read().decode()
    return int(float([l.split()[1] for l in t.splitlines() if l.startswith(name + " ")][0]))
A, B = [], []
for r in range(reps):
    # (the first one also fills the cache: its prefill leaves the shared part there)
    a = req(f" Question {r}a: how many boats wait at step {r}?", False)
    c0 = metric("sluice_prompt_tokens_cached_total")
    b = req(f" Question {r}b: how many boats wait at step {r}?", True)
    cached = metric("sluice_prompt_tokens_cached_total") - c0
    print(f"rep {r}: ttft without reuse {a*1e3:.0f} ms, with reuse {b*1e3:.0f} ms ({cached} cached tokens)")
    A.append(a); B.append(b)
ma, mb = statistics.median(A), statistics.median(B)
print(f"prompt tokens per request: {metric('sluice_prompt_tokens_total') // (2 * reps)}")
print(f"median ttft: without reuse {ma*1e3:.0f} ms, with reuse {mb*1e3:.0f} ms, ratio {ma/mb:.1f}x")
EOF
