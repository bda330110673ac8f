// Bounded loopback load: 64 concurrent streaming clients (OpenAI and Anthropic streams, 127.0.0.1 only,
// 2 requests each, 60 s cap) all complete; then clients that disconnect mid-stream get their requests
// aborted. Afterwards /v1/stats shows no running request and an empty KV pool.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer, http, readSse } = require('./harness');

let server;
before(async () => { server = await startServer(['--max-running-requests', '16', '--http-threads', '160', '--context-length', '4096']); });
after(async () => { await server.stop(); });

const kClients = 64, kPerClient = 2, kMaxTokens = 24;

async function oneStream(i, anthropic) {
  const path = anthropic ? '/v1/messages' : '/v1/chat/completions';
  const body = anthropic
    ? { model: 'm', max_tokens: kMaxTokens, stream: true, messages: [{ role: 'user', content: `client ${i}` }] }
    : { model: 'm', max_tokens: kMaxTokens, stream: true, messages: [{ role: 'user', content: `client ${i}` }], stream_options: { include_usage: true } };
  const t0 = performance.now();
  const res = await fetch(server.base + path, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body), signal: AbortSignal.timeout(60000) });
  assert.equal(res.status, 200);
  const events = await readSse(res);
  if (anthropic) assert.equal(events.at(-1).event, 'message_stop');
  else assert.equal(events.at(-1).data, '[DONE]');
  return performance.now() - t0;
}

async function waitIdle() {
  for (let i = 0; i < 100; ++i) {
    const s = (await http(server.base, 'GET', '/v1/stats')).json;
    if (s.requests.running === 0 && s.requests.queued === 0 && s.kv.pages_used === 0 && s.active_generations === 0) return s;
    await new Promise((r) => setTimeout(r, 50));
  }
  return (await http(server.base, 'GET', '/v1/stats')).json;
}

test(`${kClients} concurrent streaming clients x ${kPerClient} requests: every stream completes, KV ends empty`, async () => {
  const t0 = performance.now();
  const latencies = [];
  await Promise.all(Array.from({ length: kClients }, async (_, c) => {
    for (let k = 0; k < kPerClient; ++k) latencies.push(await oneStream(c * kPerClient + k, (c + k) % 2 === 1));
  }));
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  console.log(JSON.stringify({ streams: latencies.length, seconds: +seconds.toFixed(2),
    p50_ms: +latencies[latencies.length >> 1].toFixed(1), p99_ms: +latencies[Math.floor(latencies.length * 0.99)].toFixed(1) }));
  assert.equal(latencies.length, kClients * kPerClient);
  const s = await waitIdle();
  assert.equal(s.kv.pages_used, 0, JSON.stringify(s));
  assert.equal(s.requests.running, 0);
});

test('clients that disconnect mid-stream abort their requests', async () => {
  const ctrls = Array.from({ length: 16 }, () => new AbortController());
  await Promise.all(ctrls.map(async (ctrl, i) => {
    const res = await fetch(server.base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', max_tokens: 100000, ignore_eos: true, stream: true, messages: [{ role: 'user', content: `d ${i}` }] }),
      signal: ctrl.signal });
    const reader = res.body.getReader();
    await reader.read();  // the first chunk: the request is running
    ctrl.abort();
  }).map((p) => p.catch(() => {})));
  // Non-streaming clients that give up are noticed too.
  await Promise.all(Array.from({ length: 4 }, (_, i) => fetch(server.base + '/v1/completions', { method: 'POST',
    headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(300),
    body: JSON.stringify({ model: 'm', prompt: `x ${i}`, max_tokens: 100000, ignore_eos: true }) }).catch(() => {})));
  const s = await waitIdle();
  assert.equal(s.kv.pages_used, 0, JSON.stringify(s));
  assert.equal(s.requests.running, 0);
  const log = (await http(server.base, 'GET', '/v1/requests?limit=20')).json.data;
  assert.ok(log.filter((r) => r.state === 'disconnected').length >= 16, JSON.stringify(log.map((r) => r.state)));
  const metrics = (await http(server.base, 'GET', '/metrics')).text;
  assert.match(metrics, /^freetoken_kv_pages_used 0$/m);
  assert.match(metrics, /^freetoken_generations_total \d+$/m);
});
