// Server lifecycle and the command-line clients: /health while loading and ready, SIGTERM during streams
// (each ends with an error event, the process exits 0), ft ctl (health, stats, requests, generate) and
// ft shell against a running server and with --model (stdin scripted), and a server whose experts live in host
// memory (--moe-backend offload) reporting its expert cache.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { execFile, spawn } = require('node:child_process');
const { promisify } = require('node:util');
const { startServer, http, model, FT_BIN } = require('./harness');
const run = promisify(execFile);

test('/health answers 503 with a status body while loading, 200 when ready; one ready line', async () => {
  // A fresh process is polled from the moment it starts listening.
  const proc = spawn(FT_BIN, ['serve', '--model', model(), '--port', '0', '--threads', '2', '--memory-budget', '256M',
    '--context-length', '256'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '', out = '';
  proc.stdout.on('data', (d) => { out += d; });
  const listening = await new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => { err += d; const m = err.match(/listening on (http:\/\/[\d.:]+)/); if (m) resolve(m[1]); });
    proc.on('exit', () => reject(new Error(err)));
  });
  const seen = new Set();
  for (let i = 0; i < 400; ++i) {
    const r = await http(listening, 'GET', '/health');
    assert.ok(r.status === 200 || r.status === 503, r.text);
    assert.ok(['loading', 'ok'].includes(r.json.status), r.text);
    assert.equal(r.status === 200, r.json.status === 'ok');
    seen.add(r.json.status);
    if (r.status === 200) break;
    const early = await http(listening, 'POST', '/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }] });
    assert.ok(early.status === 503 || early.status === 200 || early.status === 400, early.text);
  }
  assert.ok(seen.has('ok'));
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(out.match(/ready on/g).length, 1, out);
  proc.kill('SIGINT');
  const code = await new Promise((r) => proc.on('exit', r));
  assert.equal(code, 0, err);
});

test('SIGTERM during streams: every stream ends with an error event, the process exits 0', async () => {
  const s = await startServer(['--context-length', '4096']);
  const streams = [0, 1, 2].map(async (i) => {
    const anthropic = i === 2;
    const res = await fetch(s.base + (anthropic ? '/v1/messages' : '/v1/chat/completions'), { method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', max_tokens: 100000, ignore_eos: true, stream: true, messages: [{ role: 'user', content: 'go ' + i }] }) });
    let text = '';
    const dec = new TextDecoder();
    for await (const chunk of res.body) text += dec.decode(chunk, { stream: true });
    return { anthropic, text };
  });
  await new Promise((r) => setTimeout(r, 300));
  const t0 = Date.now();
  const { code } = await s.stop();
  assert.equal(code, 0, s.stderr());
  assert.ok(Date.now() - t0 < 10000, 'stopped promptly');
  for (const { anthropic, text } of await Promise.all(streams)) {
    if (anthropic) assert.match(text, /event: error\ndata: \{"type":"error","error":\{"type":"overloaded_error"/);
    else assert.match(text, /data: \{"error":\{"message":"the server is shutting down","type":"server_error"/);
    assert.ok(!text.includes('[DONE]') && !text.includes('message_stop'));
  }
});

test('ft ctl: health, stats, requests, generate', async () => {
  const s = await startServer();
  try {
    const base = ['ctl', '--base-url', s.base];
    assert.match((await run(FT_BIN, [...base, 'health'])).stdout, /qwen3_moe: ok/);
    const stats = JSON.parse((await run(FT_BIN, [...base, '--json', 'stats'])).stdout);
    assert.equal(stats.status, 'ok');
    assert.ok(stats.kv.pages_total > 0);
    const gen = JSON.parse((await run(FT_BIN, [...base, '--json', 'generate', 'Once upon', '--max-tokens', '5', '--ignore-eos'])).stdout);
    assert.equal(gen.usage.completion_tokens, 5);
    const reqs = JSON.parse((await run(FT_BIN, [...base, '--json', 'requests'])).stdout);
    assert.equal(reqs.data.at(-1).endpoint, 'completions');
    assert.equal(reqs.data.at(-1).completion_tokens, 5);
    await assert.rejects(run(FT_BIN, ['ctl', '--base-url', 'http://127.0.0.1:9', '--timeout', '1', 'health']));
  } finally { await s.stop(); }
});

function shell(args, input) {
  return new Promise((resolve, reject) => {
    const p = spawn(FT_BIN, ['shell', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('exit', (code) => (code === 0 ? resolve({ out, err }) : reject(new Error(`exit ${code}: ${err}`))));
    p.stdin.end(input);
  });
}

test('ft shell: chats with a server and with --model, commands work', async () => {
  const s = await startServer();
  try {
    const { out } = await shell(['--server', s.base, '--max-tokens', '4', '--no-think'], 'hello\n/help\n/reset\nagain\n/quit\n');
    assert.match(out, /\/reset/);
    assert.match(out, /conversation cleared/);
    const log = (await http(s.base, 'GET', '/v1/requests')).json.data;
    assert.equal(log.filter((r) => r.endpoint === 'chat.completions').length, 2);
  } finally { await s.stop(); }
  const { err } = await shell(['--model', model(), '--threads', '2', '--memory-budget', '256M', '--context-length', '512', '--max-tokens', '3'], 'hi\n');
  assert.match(err, /qwen3_moe loaded/);
});

test('experts in host memory: --moe-strategy offload serves, /v1/stats and /metrics report the expert cache', async () => {
  const srv = await startServer(['--moe-strategy', 'offload', '--moe-cache-size', '8']);
  try {
    const r = await http(srv.url, 'POST', '/chat/completions', {
      model: 'm', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, temperature: 0, ignore_eos: true,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.usage.completion_tokens, 8);
    let experts;
    for (let i = 0; i < 100; ++i) {  // the counters are published once the engine is idle again
      experts = (await http(srv.base, 'GET', '/v1/stats')).json.experts;
      if (experts.hits + experts.fetched > 0) break;
      await new Promise((res) => setTimeout(res, 20));
    }
    assert.equal(experts.moe_backend, 'offload');
    assert.equal(experts.cache_slots, 8);
    assert.equal(experts.experts_total, 24);  // 3 MoE layers of 8 experts
    assert.equal(experts.layers.length, 3);
    assert.ok(experts.hits + experts.fetched > 0, JSON.stringify(experts));
    assert.ok(experts.fetched > 0 && experts.bytes_fetched > 0, JSON.stringify(experts));
    // Fills took time, less than the steps that ran them; nothing ran on the CPU's expert path.
    assert.ok(experts.copy_seconds > 0 && experts.copy_seconds < experts.step_seconds, JSON.stringify(experts));
    assert.equal(experts.cpu_seconds, 0);
    assert.ok(experts.layers.every((l) => l.copy_ms >= 0) && experts.layers.some((l) => l.copy_ms > 0));
    const metrics = (await http(srv.base, 'GET', '/metrics')).text;
    assert.match(metrics, /freetoken_expert_lookups_total\{outcome="fetched"\} [1-9]/);
    assert.match(metrics, /freetoken_expert_copy_seconds_total [0-9.e-]+\n/);
    assert.match(metrics, /freetoken_step_seconds_total [0-9.e-]+\n/);
  } finally {
    await srv.stop();
  }
});
