// The real ft serve driven by the official `@anthropic-ai/sdk` (1.14.0): messages (plain, streamed, the
// stream() helper), system, tools / tool_use / tool_result, thinking, stop_sequences, count_tokens, errors.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const Anthropic = require('@anthropic-ai/sdk');
const { startServer, http, isAnthropicError } = require('./harness');

let server, client;
before(async () => {
  server = await startServer();
  client = new Anthropic({ apiKey: 'unused', baseURL: server.base, maxRetries: 0, timeout: 60000 });
});
after(async () => { await server.stop(); });

const messages = [{ role: 'user', content: 'Tell me about Paris.' }];
const greedy = { temperature: 0 };

test('messages.create: shape, usage, system', async () => {
  const r = await client.messages.create({ model: 'qwen3_moe', max_tokens: 12, system: 'Be brief.', messages, ...greedy });
  assert.equal(r.type, 'message');
  assert.equal(r.role, 'assistant');
  assert.equal(r.content[0].type, 'text');
  assert.ok(['end_turn', 'max_tokens'].includes(r.stop_reason));
  assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens >= 1 && r.usage.output_tokens <= 12);
});

test('messages.stream() helper: text events add up to the final message, which equals create()', async () => {
  const whole = await client.messages.create({ model: 'm', max_tokens: 20, messages, ...greedy });
  const parts = [];
  const s = client.messages.stream({ model: 'm', max_tokens: 20, messages, ...greedy });
  s.on('text', (t) => parts.push(t));
  const final = await s.finalMessage();
  assert.equal(parts.join(''), whole.content[0].text);
  assert.equal(await s.finalText(), whole.content[0].text);
  assert.equal(final.stop_reason, whole.stop_reason);
  assert.deepEqual(final.usage.output_tokens, whole.usage.output_tokens);
  assert.equal(final.usage.input_tokens, whole.usage.input_tokens);
});

test('count_tokens equals the input_tokens of the same message', async () => {
  const r = await client.messages.create({ model: 'm', max_tokens: 2, system: 'sys', messages });
  const c = await client.messages.countTokens({ model: 'm', system: 'sys', messages });
  assert.equal(c.input_tokens, r.usage.input_tokens);
});

test('stop_sequences: stop_reason stop_sequence and the text cut before it', async () => {
  const ref = await client.messages.create({ model: 'm', max_tokens: 40, messages, ...greedy });
  const text = ref.content[0].text;
  const stop = [...text].slice(8, 11).join('');
  for (const stream of [false, true]) {
    const req = { model: 'm', max_tokens: 40, messages, ...greedy, stop_sequences: [stop] };
    const r = stream ? await client.messages.stream(req).finalMessage() : await client.messages.create(req);
    assert.equal(r.content[0].text, text.slice(0, text.indexOf(stop)), `stream=${stream}`);
    assert.equal(r.stop_reason, 'stop_sequence');
    assert.equal(r.stop_sequence, stop);
  }
});

const tools = [{ name: 'get_weather', description: 'Weather of a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];

test('tool_choice tool gives a tool_use block (create and stream helper)', async () => {
  const req = { model: 'm', max_tokens: 8, messages, tools, tool_choice: { type: 'tool', name: 'get_weather' }, ...greedy };
  for (const r of [await client.messages.create(req), await client.messages.stream(req).finalMessage()]) {
    const block = r.content.find((b) => b.type === 'tool_use');
    assert.ok(block, JSON.stringify(r.content));
    assert.equal(block.name, 'get_weather');
    assert.equal(typeof block.input, 'object');
    assert.match(block.id, /^toolu_/);
  }
});

test('tool_use and tool_result history, thinking enabled', async () => {
  const r = await client.messages.create({ model: 'm', max_tokens: 6, tools, thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [
      ...messages,
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'need weather', signature: '' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '21 C' }, { type: 'text', text: 'And so?' }] },
    ] });
  assert.equal(r.type, 'message');
  for (const b of r.content) assert.ok(['thinking', 'text', 'tool_use'].includes(b.type));
});

test('errors: Anthropic error bodies through the SDK and raw', async () => {
  await assert.rejects(client.messages.create({ model: 'm', max_tokens: 0, messages }),
    (e) => e instanceof Anthropic.BadRequestError && e.error.type === 'error' && e.error.error.type === 'invalid_request_error');
  await assert.rejects(client.messages.create({ model: 'm', max_tokens: 4, messages: [{ role: 'robot', content: 'x' }] }),
    (e) => e.status === 400 && /role/.test(e.message));
  const raw = await http(server.base, 'POST', '/v1/messages', '{"model":', { 'anthropic-version': '2023-06-01' });
  assert.equal(raw.status, 400);
  assert.ok(isAnthropicError(raw.json), raw.text);
});

test('with --api-key: x-api-key and Bearer work, any anthropic-version, wrong key 401', async () => {
  const s = await startServer(['--api-key', 'k1']);
  try {
    const ok = new Anthropic({ apiKey: 'k1', baseURL: s.base, maxRetries: 0 });
    assert.equal((await ok.messages.create({ model: 'm', max_tokens: 2, messages })).type, 'message');
    for (const headers of [{ 'x-api-key': 'k1', 'anthropic-version': '2023-06-01' },
      { authorization: 'Bearer k1', 'anthropic-version': '2026-10-21' }]) {
      const r = await http(s.base, 'POST', '/v1/messages', { model: 'm', max_tokens: 2, messages }, headers);
      assert.equal(r.status, 200, r.text);
    }
    const bad = await http(s.base, 'POST', '/v1/messages', { model: 'm', max_tokens: 2, messages }, { 'x-api-key': 'nope' });
    assert.equal(bad.status, 401);
    assert.ok(isAnthropicError(bad.json) && bad.json.error.type === 'authentication_error', bad.text);
  } finally { await s.stop(); }
});
