// The official `openai` npm client against `sluice serve` on loopback
// (tests/serve/run.sh starts the server and passes SLUICE_URL, SLUICE_KEY).
// Completions, chat completions (the model has no template: ChatML, logged),
// streaming of both, models, errors as the client's typed exceptions, greedy
// determinism (stream == non-stream), and each OpenAI field served: content
// parts, logprobs / top_logprobs, echo, n (refused above 1).
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const client = new OpenAI({ baseURL: process.env.SLUICE_URL + '/v1', apiKey: process.env.SLUICE_KEY, maxRetries: 0 });
let passed = 0;
async function test(name, fn) {
  try { await fn(); passed++; console.log(`ok   ${name}`); }
  catch (e) { console.log(`FAIL ${name}: ${e.stack || e}`); process.exitCode = 1; }
}

await test('models', async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  assert.equal(list.data[0].object, 'model');
});

let completionText;
await test('completion', async () => {
  const r = await client.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: 24, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices.length, 1);
  completionText = r.choices[0].text;
  assert.ok(completionText.length > 0, 'some text');
  assert.ok(['length', 'stop'].includes(r.choices[0].finish_reason));
  assert.equal(r.usage.completion_tokens <= 24, true);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

await test('completion stream equals non-stream (greedy)', async () => {
  const s = await client.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: 24, temperature: 0, stream: true });
  let text = '', finish = null, chunks = 0;
  for await (const c of s) { text += c.choices[0].text; finish = c.choices[0].finish_reason ?? finish; chunks++; }
  assert.equal(text, completionText);
  assert.ok(chunks >= 20, `${chunks} chunks for 24 tokens (one per token)`);
  assert.ok(finish === 'length' || finish === 'stop');
});

let chatText;
await test('chat completion', async () => {
  const r = await client.chat.completions.create({
    model: 'm', max_tokens: 16, temperature: 0,
    messages: [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me about a cat.' }],
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  chatText = r.choices[0].message.content;
  assert.equal(typeof chatText, 'string');
  assert.ok(r.usage.prompt_tokens > 5);
});

await test('chat stream equals non-stream (greedy)', async () => {
  const s = await client.chat.completions.create({
    model: 'm', max_tokens: 16, temperature: 0, stream: true,
    messages: [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me about a cat.' }],
  });
  let text = '', role = null, finish = null;
  for await (const c of s) {
    role = c.choices[0].delta.role ?? role;
    text += c.choices[0].delta.content ?? '';
    finish = c.choices[0].finish_reason ?? finish;
  }
  assert.equal(role, 'assistant');
  assert.equal(text, chatText);
  assert.ok(finish);
});

const catMessages = [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me about a cat.' }];

await test('content as an array of text parts = the same text as a string', async () => {
  const r = await client.chat.completions.create({
    model: 'm', max_tokens: 16, temperature: 0,
    messages: [{ role: 'system', content: [{ type: 'text', text: 'You tell stories.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Tell me ' }, { type: 'text', text: 'about a cat.' }] }],
  });
  assert.equal(r.choices[0].message.content, chatText);
});

await test('a non-text content part is a typed 400 that says so', async () => {
  await assert.rejects(client.chat.completions.create({ model: 'm', max_tokens: 4, messages: [{ role: 'user',
    content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }] }),
  (e) => e instanceof OpenAI.BadRequestError && /only text parts/.test(e.message) && /image_url/.test(e.message));
});

await test('chat logprobs + top_logprobs', async () => {
  const r = await client.chat.completions.create({ model: 'm', max_tokens: 12, temperature: 0, logprobs: true,
    top_logprobs: 3, messages: catMessages });
  const c = r.choices[0], lp = c.logprobs.content;
  assert.equal(c.message.content, chatText.slice(0, c.message.content.length));
  assert.equal(lp.length, r.usage.completion_tokens);
  assert.equal(lp.map((x) => x.token).join(''), c.message.content);
  for (const x of lp) {
    assert.ok(x.logprob <= 0 && x.top_logprobs.length >= 1 && x.top_logprobs.length <= 3, JSON.stringify(x));
    assert.equal(x.top_logprobs[0].token, x.token, 'greedy: the pick is the most likely');
    assert.equal(x.top_logprobs[0].logprob, x.logprob);
    assert.deepEqual(x.bytes, [...Buffer.from(x.token)]);
  }
  // after the request's sampling settings: top_k 1 leaves one token, of probability 1
  const k1 = await client.chat.completions.create({ model: 'm', max_tokens: 4, temperature: 0.7, top_k: 1, seed: 1,
    logprobs: true, top_logprobs: 5, messages: catMessages });
  for (const x of k1.choices[0].logprobs.content) { assert.equal(x.logprob, 0); assert.equal(x.top_logprobs.length, 1); }
  const none = await client.chat.completions.create({ model: 'm', max_tokens: 2, messages: catMessages });
  assert.equal(none.choices[0].logprobs, null);
});

await test('chat logprobs while streaming', async () => {
  const s = await client.chat.completions.create({ model: 'm', max_tokens: 12, temperature: 0, logprobs: true,
    top_logprobs: 2, stream: true, messages: catMessages });
  let text = '', toks = '', n = 0;
  for await (const c of s) {
    text += c.choices[0].delta.content ?? '';
    for (const x of c.choices[0].logprobs?.content ?? []) { toks += x.token; n++; }
  }
  assert.equal(toks, text);
  assert.ok(n >= 10, `${n} tokens`);
});

await test('completions logprobs and echo', async () => {
  const prompt = 'Once upon a time';
  const r = await client.completions.create({ model: 'm', prompt, max_tokens: 8, temperature: 0, logprobs: 2, echo: true });
  const c = r.choices[0], lp = c.logprobs;
  assert.ok(c.text.startsWith(prompt), c.text);
  assert.equal(c.text.slice(prompt.length), completionText.slice(0, c.text.length - prompt.length));
  assert.equal(lp.tokens.length, 8);
  assert.equal(lp.tokens.join(''), c.text.slice(prompt.length));
  assert.equal(lp.text_offset[0], prompt.length);
  for (let i = 0; i < 8; i++) {
    assert.ok(lp.token_logprobs[i] <= 0);
    assert.equal(lp.top_logprobs[i][lp.tokens[i]], lp.token_logprobs[i]);
    assert.ok(Object.keys(lp.top_logprobs[i]).length <= 2);
    if (i) assert.equal(lp.text_offset[i], lp.text_offset[i - 1] + lp.tokens[i - 1].length);
  }
  const s = await client.completions.create({ model: 'm', prompt, max_tokens: 8, temperature: 0, echo: true, stream: true });
  let text = '';
  for await (const ch of s) text += ch.choices[0].text;
  assert.equal(text, c.text);
  await assert.rejects(client.chat.completions.create({ model: 'm', max_tokens: 2, messages: catMessages, echo: true }),
    (e) => e instanceof OpenAI.BadRequestError && /echo/.test(e.message));
});

await test('n > 1 is refused with a 400 that says so', async () => {
  await assert.rejects(client.completions.create({ model: 'm', prompt: 'x', max_tokens: 2, n: 2 }),
    (e) => e instanceof OpenAI.BadRequestError && e.error?.param === 'n' && /one choice per request/.test(e.message));
  await assert.rejects(client.chat.completions.create({ model: 'm', max_tokens: 2, n: 3, messages: catMessages }),
    (e) => e instanceof OpenAI.BadRequestError && /one choice per request/.test(e.message));
  const one = await client.completions.create({ model: 'm', prompt: 'x', max_tokens: 2, n: 1 });
  assert.equal(one.choices.length, 1);
});

await test('stop string and seeded sampling', async () => {
  const a = await client.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: 40, temperature: 0.9, seed: 11, top_k: 20 });
  const b = await client.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: 40, temperature: 0.9, seed: 11, top_k: 20 });
  assert.equal(a.choices[0].text, b.choices[0].text, 'same seed, same text');
  const cut = completionText.indexOf(' ', 3);
  const stop = completionText.slice(cut, cut + 3);
  const r = await client.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: 24, temperature: 0, stop: [stop] });
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.choices[0].text, completionText.slice(0, completionText.indexOf(stop)));
});

await test('shared system prompt: the second request reports cached tokens', async () => {
  const system = 'You tell short stories for children about a cat named Lily and a dog named Tom, ' +
    'who live in a small town by the sea, play in the park every day and share their toys.';
  const ask = (u) => client.chat.completions.create({ model: 'm', max_tokens: 8, temperature: 0,
    messages: [{ role: 'system', content: system }, { role: 'user', content: u }] });
  const a = await ask('Tell me about the cat.');
  const b = await ask('Tell me about the dog.');
  assert.ok(a.usage.prompt_tokens >= 64, `${a.usage.prompt_tokens} prompt tokens`);
  assert.equal(typeof b.usage.prompt_tokens_details.cached_tokens, 'number');
  assert.ok(b.usage.prompt_tokens_details.cached_tokens >= 64, JSON.stringify(b.usage));
  assert.ok(b.usage.prompt_tokens_details.cached_tokens < b.usage.prompt_tokens);
});

await test('bad request is a typed 400', async () => {
  await assert.rejects(client.completions.create({ model: 'm', prompt: 'x', temperature: 7 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && /temperature/.test(e.message));
});

await test('wrong key is a typed 401', async () => {
  const bad = new OpenAI({ baseURL: process.env.SLUICE_URL + '/v1', apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
});

console.log(`node openai client: ${passed} passed${process.exitCode ? ', some FAILED' : ''}`);
