// The real ft serve driven by the official `openai` SDK (6.49.0): chat (plain, streamed, the stream()
// helper, n, logprobs, stop, tools), completions, responses, models, and its error handling.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const OpenAI = require('openai');
const { startServer } = require('./harness');

let server, client;
before(async () => {
  server = await startServer();
  client = new OpenAI({ apiKey: 'unused', baseURL: server.url, maxRetries: 0, timeout: 60000 });
});
after(async () => { await server.stop(); });

const msgs = [{ role: 'user', content: 'Tell me about Paris.' }];
const greedy = { temperature: 0, seed: 7 };

test('chat completion: shape and usage', async () => {
  const r = await client.chat.completions.create({ model: 'qwen3_moe', messages: msgs, max_tokens: 12, ...greedy });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 12);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

test('streamed chat equals the non-streamed text (greedy), with include_usage', async () => {
  const whole = await client.chat.completions.create({ model: 'm', messages: msgs, max_tokens: 24, ...greedy });
  const stream = await client.chat.completions.create({ model: 'm', messages: msgs, max_tokens: 24, ...greedy,
    stream: true, stream_options: { include_usage: true } });
  let text = '', usage = null, finish = null;
  for await (const c of stream) {
    if (c.usage) { usage = c.usage; assert.deepEqual(c.choices, []); continue; }
    text += c.choices[0].delta.content ?? '';
    if (c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
  }
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.deepEqual(usage, whole.usage);
});

test('chat.completions.stream() helper accumulates a final completion', async () => {
  const deltas = [];
  const s = client.chat.completions.stream({ model: 'm', messages: msgs, max_tokens: 16, ...greedy,
    stream_options: { include_usage: true } });
  s.on('content.delta', (e) => deltas.push(e.delta));
  const final = await s.finalChatCompletion();
  assert.equal(final.choices[0].message.content, deltas.join(''));
  assert.ok(final.usage.completion_tokens > 0);
});

test('n = 3 choices and logprobs with top_logprobs', async () => {
  const r = await client.chat.completions.create({ model: 'm', messages: msgs, max_tokens: 6, n: 3, seed: 1,
    logprobs: true, top_logprobs: 3 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  for (const c of r.choices) {
    assert.ok(c.logprobs.content.length >= 1);
    for (const t of c.logprobs.content) {
      assert.ok(t.logprob <= 0);
      assert.equal(t.top_logprobs.length, 3);
      assert.ok(t.top_logprobs[0].logprob >= t.top_logprobs[2].logprob);
    }
  }
  assert.equal(r.usage.completion_tokens, r.choices.reduce((n, c) => n + c.logprobs.content.length, 0));
});

test('stop strings cut the text before the match, across token boundaries', async () => {
  const ref = await client.chat.completions.create({ model: 'm', messages: msgs, max_tokens: 40, ...greedy, ignore_eos: true });
  const text = ref.choices[0].message.content;
  const stop = [...text].slice(10, 13).join('');  // three characters from the middle of the greedy text
  const cut = text.indexOf(stop);
  for (const stream of [false, true]) {
    const req = { model: 'm', messages: msgs, max_tokens: 40, ...greedy, ignore_eos: true, stop: [stop] };
    let got, finish;
    if (stream) {
      got = ''; for await (const c of await client.chat.completions.create({ ...req, stream: true })) {
        got += c.choices[0]?.delta?.content ?? ''; finish = c.choices[0]?.finish_reason ?? finish;
      }
    } else {
      const r = await client.chat.completions.create(req);
      got = r.choices[0].message.content; finish = r.choices[0].finish_reason;
    }
    assert.equal(got, text.slice(0, cut), `stream=${stream}`);
    assert.equal(finish, 'stop');
  }
});

const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];

test('named tool_choice returns a tool call through the stream helper', async () => {
  const s = client.chat.completions.stream({ model: 'm', messages: msgs, tools, max_tokens: 8, ...greedy,
    tool_choice: { type: 'function', function: { name: 'get_weather' } } });
  const final = await s.finalChatCompletion();
  const call = final.choices[0].message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  assert.equal(typeof call.function.arguments, 'string');
  assert.match(call.id, /^call_/);
  const whole = await client.chat.completions.create({ model: 'm', messages: msgs, tools, max_tokens: 8, ...greedy,
    tool_choice: { type: 'function', function: { name: 'get_weather' } } });
  assert.deepEqual(whole.choices[0].message.tool_calls[0].function, call.function);
  assert.equal(whole.choices[0].message.content, null);
});

test('a conversation with tool calls and tool results renders and runs', async () => {
  const r = await client.chat.completions.create({ model: 'm', max_tokens: 4, tools, messages: [
    ...msgs,
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
  ] });
  assert.equal(r.object, 'chat.completion');
});

test('completions: string, string array and token-array prompts, streamed too', async () => {
  const one = await client.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: 5, ...greedy });
  assert.equal(one.object, 'text_completion');
  assert.equal(one.choices.length, 1);
  const many = await client.completions.create({ model: 'm', prompt: ['a b c', 'd e f'], max_tokens: 3, n: 2, seed: 3 });
  assert.deepEqual(many.choices.map((c) => c.index), [0, 1, 2, 3]);
  const ids = await client.completions.create({ model: 'm', prompt: [1, 2, 3, 4, 5], max_tokens: 4, ...greedy, logprobs: 2 });
  assert.equal(ids.choices[0].logprobs.tokens.length, ids.usage.completion_tokens);
  let text = '';
  for await (const c of await client.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: 5, ...greedy, stream: true }))
    text += c.choices[0]?.text ?? '';
  assert.equal(text, one.choices[0].text);
});

test('models.list and retrieve', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['qwen3_moe']);
  assert.equal((await client.models.retrieve('qwen3_moe')).id, 'qwen3_moe');
});

test('responses: create, stream and output_text', async () => {
  const r = await client.responses.create({ model: 'm', input: 'Hello there', max_output_tokens: 8, temperature: 0,
    instructions: 'Be brief.' });
  assert.equal(r.object, 'response');
  assert.ok(['completed', 'incomplete'].includes(r.status));
  assert.equal(typeof r.output_text, 'string');
  const s = client.responses.stream({ model: 'm', input: 'Hello there', max_output_tokens: 8, temperature: 0, instructions: 'Be brief.' });
  let deltas = '';
  s.on('response.output_text.delta', (e) => { deltas += e.delta; });
  const final = await s.finalResponse();
  assert.equal(deltas, r.output_text);
  assert.equal(final.output_text, r.output_text);
});

test('errors come back as APIError with the OpenAI error body', async () => {
  await assert.rejects(client.chat.completions.create({ model: 'm', messages: [], max_tokens: 4 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.error.type === 'invalid_request_error' &&
      /messages/.test(e.message));
  await assert.rejects(client.chat.completions.create({ model: 'm', messages: msgs, max_tokens: 0 }),
    (e) => e.status === 400 && e.error.param === 'max_tokens');
  await assert.rejects(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x '.repeat(2000) }] }),
    (e) => e.status === 400 && /context/.test(e.message));
  await assert.rejects(client.models.retrieve('nope'), (e) => e instanceof OpenAI.NotFoundError);
});

test('with --api-key: Bearer and x-api-key are accepted, a wrong key is 401', async () => {
  const s = await startServer(['--api-key', 'sekret']);
  try {
    const ok = new OpenAI({ apiKey: 'sekret', baseURL: s.url, maxRetries: 0 });
    assert.equal((await ok.chat.completions.create({ model: 'm', messages: msgs, max_tokens: 2 })).object, 'chat.completion');
    const bad = new OpenAI({ apiKey: 'wrong', baseURL: s.url, maxRetries: 0 });
    await assert.rejects(bad.chat.completions.create({ model: 'm', messages: msgs, max_tokens: 2 }),
      (e) => e instanceof OpenAI.AuthenticationError && e.error.type === 'authentication_error');
    const raw = await fetch(s.base + '/v1/models', { headers: { 'x-api-key': 'sekret' } });
    assert.equal(raw.status, 200);
    assert.equal((await fetch(s.base + '/health')).status, 200, '/health needs no key');
  } finally { await s.stop(); }
});
