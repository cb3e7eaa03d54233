// Server load: C concurrent clients, each sending R streaming completions to
// `sluice serve`; time to first token (first SSE chunk with text) and
// aggregate generated tok/s. Usage: node perf/serve_load.mjs URL CLIENTS REQS MAX_TOKENS
const [url, clients = '8', reqs = '4', maxTok = '32'] = process.argv.slice(2);
const prompts = ['Once upon a time', 'The cat', 'Lily and Tom went', 'One day'];
const ttft = [];
let tokens = 0;
async function one(p) {
  const t0 = performance.now();
  const r = await fetch(url + '/v1/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: p, max_tokens: +maxTok, temperature: 0, stream: true }),
  });
  let first = true, buf = '';
  const dec = new TextDecoder();
  for await (const chunk of r.body) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i); buf = buf.slice(i + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const j = JSON.parse(ev.slice(6));
      if (j.choices[0].text) { if (first) { ttft.push(performance.now() - t0); first = false; } tokens++; }
    }
  }
}
const t0 = performance.now();
await Promise.all(Array.from({ length: +clients }, async (_, c) => {
  for (let k = 0; k < +reqs; k++) await one(prompts[(c + k) % prompts.length]);
}));
const wall = (performance.now() - t0) / 1e3;
ttft.sort((a, b) => a - b);
const q = (f) => ttft[Math.min(ttft.length - 1, Math.floor(f * ttft.length))];
console.log(`clients ${clients} x ${reqs}: TTFT p50 ${q(0.5).toFixed(1)} ms p99 ${q(0.99).toFixed(1)} ms; ` +
            `${tokens} chunks in ${wall.toFixed(2)} s = ${(tokens / wall).toFixed(1)} tok/s`);
