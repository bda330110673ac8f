// Every kind of bad input, sent raw while other clients stream: each must get a 4xx with the protocol's
// error body (OpenAI {"error":{message,type,param,code}}, Anthropic {"type":"error","error":{type,message}}),
// the server must not crash, and the concurrent streams must complete.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { startServer, http, readSse, isOpenAIError, isAnthropicError } = require('./harness');

let server;
before(async () => { server = await startServer(['--max-body-size', '64K']); });
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'ft serve exits cleanly');
});

const user = [{ role: 'user', content: 'hi' }];
const chat = (extra) => ({ model: 'm', messages: user, max_tokens: 4, ...extra });
const msg = (extra) => ({ model: 'm', max_tokens: 4, messages: user, ...extra });
const comp = (extra) => ({ model: 'm', prompt: 'hi', max_tokens: 4, ...extra });
const long = 'word '.repeat(3000);

// [path, body (object or raw string), expected status]
const cases = [
  // malformed JSON and wrong body types, on every POST route
  ...['/v1/chat/completions', '/v1/completions', '/v1/responses', '/v1/messages', '/v1/messages/count_tokens'].flatMap((p) => [
    [p, '{', 400], [p, '', 400], [p, 'null', 400], [p, '[]', 400], [p, '"text"', 400], [p, '42', 400],
    [p, '{"a":1,}', 400], [p, '\u0000\u0001', 400], [p, '{"messages": [}', 400],
  ]),
  // OpenAI chat: messages
  ['/v1/chat/completions', chat({ messages: [] }), 400],
  ['/v1/chat/completions', chat({ messages: 'hi' }), 400],
  ['/v1/chat/completions', chat({ messages: null }), 400],
  ['/v1/chat/completions', { model: 'm' }, 400],
  ['/v1/chat/completions', chat({ messages: [{ role: 'wizard', content: 'x' }] }), 400],
  ['/v1/chat/completions', chat({ messages: [{ content: 'x' }] }), 400],
  ['/v1/chat/completions', chat({ messages: [{ role: 7, content: 'x' }] }), 400],
  ['/v1/chat/completions', chat({ messages: [{ role: 'user' }] }), 400],
  ['/v1/chat/completions', chat({ messages: [{ role: 'user', content: 5 }] }), 400],
  ['/v1/chat/completions', chat({ messages: [{ role: 'user', content: [{ type: 'video', url: 'x' }] }] }), 400],
  ['/v1/chat/completions', chat({ messages: [{ role: 'user', content: [{ type: 'text' }] }] }), 400],
  ['/v1/chat/completions', chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }] }), 400],
  ['/v1/chat/completions', chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://evil.example/x.png' } }] }] }), 400],
  ['/v1/chat/completions', chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'file:///etc/passwd' } }] }] }), 400],
  ['/v1/chat/completions', chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] }), 400],
  ['/v1/chat/completions', chat({ messages: ['hi'] }), 400],
  ['/v1/chat/completions', chat({ messages: [{ role: 'user', content: 'x', tool_calls: [] }] }), 400],
  ['/v1/chat/completions', chat({ messages: [{ role: 'assistant', content: null, tool_calls: [{ function: { arguments: '{}' } }] }] }), 400],
  ['/v1/chat/completions', chat({ messages: [{ role: 'user', content: long }] }), 400],
  ['/v1/chat/completions', chat({ messages: [{ role: 'tool', tool_call_id: 'call_1' }] }), 400],
  // OpenAI chat: sampling and limits
  ...[['max_tokens', 0], ['max_tokens', -5], ['max_tokens', 'ten'], ['max_tokens', 1.5], ['max_completion_tokens', 0],
    ['temperature', -1], ['temperature', 3], ['temperature', 'hot'], ['top_p', 0], ['top_p', 1.5], ['top_k', -2],
    ['min_p', 2], ['presence_penalty', 5], ['frequency_penalty', -3], ['repetition_penalty', 0], ['n', 0], ['n', 100],
    ['seed', 'abc'], ['seed', 1.5], ['stop', 5], ['stop', ['']], ['stop', [1, 2]], ['stop', Array(20).fill('x')],
    ['stream', 'yes'], ['stream_options', { include_usage: true }], ['logprobs', 'yes'], ['top_logprobs', 5],
    ['top_logprobs', 50], ['logit_bias', { 1: 5 }], ['logit_bias', 3], ['response_format', { type: 'json_schema', json_schema: {} }],
    ['response_format', { type: 'json_object' }], ['response_format', { type: 'xml' }], ['response_format', 'json'],
    ['chat_template_kwargs', 'x'], ['chat_template_kwargs', { enable_thinking: 'yes' }], ['model', 5]]
    .map(([k, v]) => ['/v1/chat/completions', chat({ [k]: v }), 400]),
  // OpenAI chat: tools
  ['/v1/chat/completions', chat({ tools: 'x' }), 400],
  ['/v1/chat/completions', chat({ tools: [{ type: 'retrieval' }] }), 400],
  ['/v1/chat/completions', chat({ tools: [{ type: 'function' }] }), 400],
  ['/v1/chat/completions', chat({ tools: [{ type: 'function', function: { name: 'bad name!' } }] }), 400],
  ['/v1/chat/completions', chat({ tools: [{ type: 'function', function: { name: 'f', parameters: 3 } }] }), 400],
  ['/v1/chat/completions', chat({ tool_choice: 'required' }), 400],
  ['/v1/chat/completions', chat({ tool_choice: 'sometimes' }), 400],
  ['/v1/chat/completions', chat({ tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: 'g' } } }), 400],
  // completions
  ['/v1/completions', comp({ prompt: '' }), 400],
  ['/v1/completions', comp({ prompt: [] }), 400],
  ['/v1/completions', comp({ prompt: [1, 'a'] }), 400],
  ['/v1/completions', comp({ prompt: [999999] }), 400],
  ['/v1/completions', comp({ prompt: [-1] }), 400],
  ['/v1/completions', comp({ prompt: 7 }), 400],
  ['/v1/completions', comp({ prompt: [[]] }), 400],
  ['/v1/completions', comp({ prompt: long }), 400],
  ['/v1/completions', comp({ max_tokens: 0 }), 400],
  ['/v1/completions', comp({ echo: true }), 400],
  ['/v1/completions', comp({ logprobs: 99 }), 400],
  ['/v1/completions', comp({ prompt: undefined }), 400],
  // responses
  ['/v1/responses', { model: 'm' }, 400],
  ['/v1/responses', { model: 'm', input: [] }, 400],
  ['/v1/responses', { model: 'm', input: 5 }, 400],
  ['/v1/responses', { model: 'm', input: [{ type: 'mystery' }] }, 400],
  ['/v1/responses', { model: 'm', input: [{ role: 'alien', content: 'x' }] }, 400],
  ['/v1/responses', { model: 'm', input: 'hi', previous_response_id: 'resp_1' }, 400],
  ['/v1/responses', { model: 'm', input: 'hi', max_output_tokens: 0 }, 400],
  ['/v1/responses', { model: 'm', input: 'hi', tools: [{ type: 'web_search' }] }, 400],
  // Anthropic messages
  ['/v1/messages', { model: 'm', messages: user }, 400],
  ['/v1/messages', msg({ max_tokens: 0 }), 400],
  ['/v1/messages', msg({ max_tokens: -1 }), 400],
  ['/v1/messages', msg({ max_tokens: 'x' }), 400],
  ['/v1/messages', msg({ messages: [] }), 400],
  ['/v1/messages', msg({ messages: [{ role: 'system', content: 'x' }] }), 400],
  ['/v1/messages', msg({ messages: [{ role: 'user', content: 3 }] }), 400],
  ['/v1/messages', msg({ messages: [{ role: 'user', content: [{ type: 'audio' }] }] }), 400],
  ['/v1/messages', msg({ messages: [{ role: 'user', content: [{ type: 'text' }] }] }), 400],
  ['/v1/messages', msg({ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }] }), 400],
  ['/v1/messages', msg({ messages: [{ role: 'user', content: [{ type: 'tool_use', id: 'x', name: 'f', input: {} }] }] }), 400],
  ['/v1/messages', msg({ messages: [{ role: 'user', content: long }] }), 400],
  ['/v1/messages', msg({ temperature: 1.5 }), 400],
  ['/v1/messages', msg({ top_p: 0 }), 400],
  ['/v1/messages', msg({ stop_sequences: 'x' }), 400],
  ['/v1/messages', msg({ system: 5 }), 400],
  ['/v1/messages', msg({ thinking: { type: 'sometimes' } }), 400],
  ['/v1/messages', msg({ thinking: { type: 'enabled', budget_tokens: 0 } }), 400],
  ['/v1/messages', msg({ tools: [{ name: 'f' }] }), 400],
  ['/v1/messages', msg({ tools: [{ name: 'f', input_schema: {} }], tool_choice: { type: 'tool', name: 'g' } }), 400],
  ['/v1/messages', msg({ tool_choice: { type: 'any' } }), 400],
  ['/v1/messages', msg({ tools: [{ type: 'web_search_20250305', name: 'web_search' }] }), 400],
  ['/v1/messages', msg({ stream: 'please' }), 400],
  ['/v1/messages/count_tokens', { model: 'm' }, 400],
  ['/v1/messages/count_tokens', { model: 'm', messages: [{ role: 'bot', content: 'x' }] }, 400],
  // unknown routes and methods
  ['/v1/nothing', chat({}), 404],
  ['/v1/messages/nothing', msg({}), 404],
  // bodies over --max-body-size (64K)
  ['/v1/chat/completions', chat({ messages: [{ role: 'user', content: 'x'.repeat(70000) }] }), 413],
  ['/v1/messages', msg({ messages: [{ role: 'user', content: 'x'.repeat(70000) }] }), 413],
];

async function streamOne(i) {
  const res = await fetch(server.url + '/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'stream ' + i }], max_tokens: 48, ignore_eos: true, stream: true }) });
  assert.equal(res.status, 200);
  const events = await readSse(res);
  assert.equal(events.at(-1).data, '[DONE]');
  return events.filter((e) => e.data !== '[DONE]' && JSON.parse(e.data).choices[0]?.finish_reason === 'length').length;
}

test(`${cases.length} malformed requests: all 4xx in the protocol's shape, while 6 clients stream`, async () => {
  assert.ok(cases.length >= 100, `only ${cases.length} cases`);
  const streams = Array.from({ length: 6 }, (_, i) => streamOne(i));
  const results = [];
  for (const [p, body, want] of cases) {
    const r = await http(server.base, 'POST', p, body, p.startsWith('/v1/messages') ? { 'anthropic-version': '2023-06-01' } : {});
    results.push({ p, body: typeof body === 'string' ? body : JSON.stringify(body).slice(0, 120), status: r.status, want, json: r.json, text: r.text });
  }
  const bad = results.filter((r) => r.status !== r.want ||
    !(r.p.startsWith('/v1/messages') ? isAnthropicError(r.json) : isOpenAIError(r.json)));
  assert.deepEqual(bad.slice(0, 10).map((r) => `${r.p} ${r.body} -> ${r.status} (want ${r.want}) ${r.text.slice(0, 160)}`), []);
  assert.deepEqual(await Promise.all(streams), [1, 1, 1, 1, 1, 1], 'every stream finished with finish_reason length');
  assert.equal((await http(server.base, 'GET', '/health')).status, 200);
});

test('GET routes with wrong methods or queries', async () => {
  const r = await http(server.base, 'GET', '/v1/requests?limit=abc');
  assert.equal(r.status, 400);
  assert.ok(isOpenAIError(r.json));
  const nf = await http(server.base, 'DELETE', '/v1/models');
  assert.ok(nf.status >= 400 && nf.status < 500);
});

test('broken HTTP framing does not hurt the server', async () => {
  const garbage = ['GARBAGE\r\n\r\n', 'POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 5\r\n\r\n{', 'POST /v1/messages HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'];
  const { port } = new URL(server.base);
  for (const g of garbage) {
    await new Promise((resolve) => {
      const s = net.connect(+port, '127.0.0.1', () => { s.write(g); setTimeout(() => s.destroy(), 200); });
      s.on('close', resolve);
      s.on('error', resolve);
    });
  }
  assert.equal((await http(server.base, 'GET', '/health')).status, 200);
});
