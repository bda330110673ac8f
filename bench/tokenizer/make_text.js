#!/usr/bin/env node
// Writes the tokenizer benchmark text: the reference corpus plus seeded multilingual paragraphs (~N MB).
// Usage: node make_text.js REFERENCE_JSON OUT_FILE [MEGABYTES]
'use strict';
const fs = require('fs');

const [, , refPath, outPath, mbArg] = process.argv;
const target = Number(mbArg || 8) * 1e6;
const corpus = JSON.parse(fs.readFileSync(refPath, 'utf8')).corpus;
let s = 0x9e3779b9;
const rand = () => ((s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 4294967296);
const pick = (a) => a[Math.floor(rand() * a.length)];
const word = (lo, hi, n) => Array.from({ length: n }, () => String.fromCodePoint(lo + Math.floor(rand() * (hi - lo)))).join('');
const latin = ['the', 'model', 'expert', 'routing', 'token', 'cache', 'memory', 'GPU', 'layer', 'attention', 'is', 'of',
  'and', 'to', 'we', "don't", "it's", 'Übersetzung', 'naïve', 'très', 'más', 'año', 'inference', 'throughput'];
const para = () => {
  const parts = [];
  for (let i = 0; i < 60; ++i) {
    switch (Math.floor(rand() * 8)) {
      case 0: parts.push(word(0x4e00, 0x9fa5, 2 + Math.floor(rand() * 6))); break;
      case 1: parts.push(word(0x430, 0x44f, 3 + Math.floor(rand() * 7))); break;
      case 2: parts.push(String(Math.floor(rand() * 1e6))); break;
      case 3: parts.push(word(0x3041, 0x3096, 3)); break;
      case 4: parts.push(pick(['😀', '👍🏽', '👨‍👩‍👧', '🚀']) ); break;
      default: parts.push(pick(latin));
    }
    parts.push(pick([' ', ' ', ' ', ', ', '. ', '\n', '  ']));
  }
  return parts.join('');
};
const out = [];
let size = 0;
while (size < target) {
  const p = rand() < 0.3 ? corpus.join('\n') : para();
  out.push(p);
  size += Buffer.byteLength(p) + 2;
}
fs.writeFileSync(outPath, out.join('\n\n'));
