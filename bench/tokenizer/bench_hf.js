#!/usr/bin/env node
// Encode throughput of Hugging Face tokenizers (the Rust library, npm `tokenizers`) on one core, on the
// same ~64 KB chunks as bench_tokenizer. Run with RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false.
// Usage: node bench_hf.js TOKENIZER_JSON TEXT_FILE [PASSES]
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require(path.join(__dirname, '../../tests/node_modules/tokenizers'));

async function main() {
  const [, , tokPath, textPath, passesArg] = process.argv;
  const passes = Number(passesArg || 3);
  const tok = Tokenizer.fromFile(tokPath);
  const text = fs.readFileSync(textPath, 'utf8');
  const buf = Buffer.from(text);
  const chunks = [];
  for (let begin = 0; begin < buf.length;) {
    let end = buf.indexOf(10, Math.min(begin + 65536, buf.length));
    end = end < 0 ? buf.length : end + 1;
    chunks.push(buf.subarray(begin, end).toString('utf8'));
    begin = end;
  }
  const mb = buf.length / 1e6;
  for (let pass = 0; pass < passes; ++pass) {
    let n = 0;
    const t0 = process.hrtime.bigint();
    for (const c of chunks) n += (await tok.encode(c, null, { addSpecialTokens: false })).getLength();
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    console.log(`hf tokenizers pass ${pass} (${pass ? 'warm' : 'cold'} cache): ${mb.toFixed(2)} MB in ${s.toFixed(3)} s = ${(mb / s).toFixed(2)} MB/s, ${n} tokens`);
  }
}
main();
