#!/usr/bin/env node
// `ft tokenize --jsonl` on the fuzz strings of the real tokenizers must print HF tokenizers' (Rust) ids.
// Usage: node check_cli.js FT_BINARY FUZZ_DIR
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const [, , ft, fuzzDir] = process.argv;
const manifest = JSON.parse(fs.readFileSync(path.join(fuzzDir, 'manifest.json'), 'utf8'));
let failures = 0;
for (const entry of manifest.filter((e) => !e.name.startsWith('syn_'))) {
  const cases = fs.readFileSync(entry.cases, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const input = path.join(fuzzDir, `${entry.name}.cli_input.jsonl`);
  fs.writeFileSync(input, cases.map((c) => JSON.stringify(c.text)).join('\n') + '\n');
  const out = execFileSync(ft, ['tokenize', '--tokenizer', path.dirname(entry.tokenizer), '--jsonl', input],
    { maxBuffer: 1 << 30 }).toString().trim().split('\n');
  let differ = 0;
  cases.forEach((c, i) => {
    if (out[i] !== JSON.stringify(c.ids) && ++differ <= 10) console.log(`${entry.name} case ${i}: ${JSON.stringify(c.text)}\n  ft ${out[i]}\n  HF ${JSON.stringify(c.ids)}`);
  });
  if (out.length !== cases.length) differ += 1;
  console.log(`${entry.name}: ${cases.length} strings, ${differ} differ`);
  failures += differ;
}
process.exit(failures ? 1 : 0);
