// Starts the real `ft serve` binary on a fixture model (a free loopback port) for the node test suites.
'use strict';
const { spawn } = require('node:child_process');
const path = require('node:path');

const FT_BIN = process.env.FT_BIN || path.join(__dirname, '../../build/cpu/ft');
const FT_TEST_DATA = process.env.FT_TEST_DATA || path.join(__dirname, '../data');
const model = (name = 'qwen3_moe') => path.join(FT_TEST_DATA, 'models', name);

// Resolves with {url, base, proc, stop()} once the server prints its ready line.
function startServer(extraArgs = [], { model: m = 'qwen3_moe' } = {}) {
  const args = ['serve', '--model', model(m), '--port', '0', '--threads', '2', '--context-length', '1024',
    '--max-running-requests', '16', '--memory-budget', '512M', ...extraArgs];
  const proc = spawn(FT_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  proc.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error('ft serve not ready in 60 s:\n' + err)); }, 60000);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`ft serve exited ${code}:\n${err}`)); });
    proc.stdout.on('data', (d) => {
      out += d;
      const m2 = out.match(/ready on (http:\/\/127\.0\.0\.1:(\d+))/);
      if (!m2) return;
      clearTimeout(timer);
      proc.removeAllListeners('exit');
      const exited = new Promise((r) => proc.on('exit', (code, signal) => r({ code, signal })));
      resolve({
        base: m2[1], url: m2[1] + '/v1', proc, stderr: () => err, exited,
        async stop() {
          if (proc.exitCode === null) proc.kill('SIGTERM');
          return exited;
        },
      });
    });
  });
}

// Raw HTTP helper: returns {status, headers, text, json}.
async function http(base, method, p, body, headers = {}) {
  const init = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
    if (!init.headers['content-type']) init.headers['content-type'] = 'application/json';
  }
  const res = await fetch(base + p, init);
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

// Reads an SSE response body into [{event, data}] (eventsource-parser, as the load tool in CLIENTS.md).
async function readSse(res) {
  const { createParser } = require('eventsource-parser');
  const events = [];
  const parser = createParser({ onEvent: (e) => events.push({ event: e.event, data: e.data }) });
  const dec = new TextDecoder();
  for await (const chunk of res.body) parser.feed(dec.decode(chunk, { stream: true }));
  return events;
}

function isOpenAIError(j) {
  return j && typeof j.error === 'object' && typeof j.error.message === 'string' && typeof j.error.type === 'string' &&
    'param' in j.error && 'code' in j.error;
}
function isAnthropicError(j) {
  return j && j.type === 'error' && typeof j.error === 'object' && typeof j.error.type === 'string' &&
    typeof j.error.message === 'string';
}

module.exports = { startServer, http, readSse, isOpenAIError, isAnthropicError, model, FT_BIN };
