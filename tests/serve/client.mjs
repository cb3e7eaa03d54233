// The official `openai` npm client against `sluice serve` on loopback
// (tests/serve/run.sh starts the server and passes SLUICE_URL, SLUICE_KEY).
// Completions, chat completions, streaming of both, models, errors as the
// client's typed exceptions, and greedy determinism (stream == non-stream).
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
