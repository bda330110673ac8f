#!/usr/bin/env node
// Differential fuzz corpus: seeded random strings, encoded and decoded by Hugging Face tokenizers (the Rust
// library through its node binding), written as JSONL for test_tokenizer_fuzz to compare against.
// Usage: node gen_fuzz.js --data DIR --out DIR [--count N] [--seed S]
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');
const { syntheticTokenizers } = require('./synthetic_tokenizers.js');

function parseArgs() {
  const a = { count: 10000, seed: 20240601 };
  for (let i = 2; i < process.argv.length; i += 2) a[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
  a.count = Number(a.count);
  a.seed = Number(a.seed);
  if (!a.data || !a.out) throw new Error('usage: gen_fuzz.js --data DIR --out DIR [--count N] [--seed S]');
  a.data = path.resolve(a.data);
  a.out = path.resolve(a.out);
  return a;
}

// mulberry32: a small seeded PRNG so every run generates the same strings.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WHITESPACE = [' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', '\r', ' \n', '\u0085', '\u00a0', '\ufeff', '\u2028',
  '\u2029', '\u3000', '\u200b', '\u180e', '\u2009', '\u202f', '\u000b', '\u000c', '\u1680'];
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'LL", "'D", "'ſ", '\u2019s'];
const WORDS = ['the', 'The', 'HELLO', 'world', 'don', 'tokenizer', 'Mixture', 'of', 'Experts', 'naïve', 'café',
  'cafe\u0301', 'straße', 'İstanbul', 'ΣΊΣΥΦΟΣ', 'Привет', 'мир', 'ﬁne', 'ﬀ', 'Ⅻ', '①②', '½', 'x²', 'Å', 'Ω'];
const PUNCT = ['.', ',', '!', '?', '...', '--', '(', ')', '[', ']', '{', '}', '"', "'", '`', '<', '>', '/', '\\',
  '#', '@', '$', '%', '^', '&', '*', '_', '=', '+', '|', '~', ':', ';', '«', '»', '、', '。', '！', '，', '・', '—'];
const EMOJI = ['😀', '👍', '👍🏽', '👨‍👩‍👧', '👩🏿‍💻', '🏳️‍🌈', '🇫🇷', '❤️', '✨', '🦀', '🤖', '1️⃣', '🧑🏻‍🤝‍🧑🏿'];
const CODE = ['def f(x):\n    return x', 'for (int i = 0; i < n; ++i) {', '    ', '\t\t', '#include <vector>',
  'x = [1, 2, 3]', '"""Docstring."""', '// comment', '</div>', '==', '!=', '->', '::', '&&', '0x1F'];
const RANGES = [
  [0x61, 0x7a], [0x41, 0x5a], [0x30, 0x39], [0x21, 0x2f], [0xc0, 0x17f], [0x300, 0x36f], [0x370, 0x3ff],
  [0x400, 0x4ff], [0x5d0, 0x5ea], [0x600, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f], [0x1100, 0x11ff],
  [0x3040, 0x309f], [0x30a0, 0x30ff], [0x3400, 0x3500], [0x4e00, 0x9fa5], [0x9fa6, 0x9fff], [0xac00, 0xd7a3],
  [0xff01, 0xff5e], [0x2000, 0x206f], [0x2070, 0x209f], [0x20a0, 0x20bf], [0x2100, 0x214f], [0x2460, 0x24ff],
  [0x1f300, 0x1f5ff], [0x1f600, 0x1f64f], [0x1f900, 0x1f9ff], [0x1d400, 0x1d4ff], [0x10000, 0x1007f],
];

function makeGenerator(rand, specials) {
  const pick = (arr) => arr[Math.floor(rand() * arr.length)];
  const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
  const randomChars = () => {
    const [lo, hi] = pick(RANGES);
    let s = '';
    for (let n = int(1, 6); n > 0; --n) s += String.fromCodePoint(int(lo, hi));
    return s;
  };
  const segment = () => {
    switch (int(0, 11)) {
      case 0: return pick(WHITESPACE).repeat(int(1, 3));
      case 1: return pick(WORDS) + (rand() < 0.3 ? pick(CONTRACTIONS) : '');
      case 2: return String(int(0, 10 ** int(1, 9)));
      case 3: return pick(PUNCT).repeat(int(1, 3));
      case 4: return pick(EMOJI);
      case 5: return pick(CODE);
      case 6: return specials.length ? pick(specials) : pick(WORDS);
      case 7: return pick(CONTRACTIONS);
      case 8: return randomChars();
      case 9: return ' ' + pick(WORDS);
      case 10: return pick(WORDS).toUpperCase() + pick(WHITESPACE);
      default: return randomChars() + pick(WHITESPACE) + randomChars();
    }
  };
  return () => {
    let s = '';
    for (let n = int(1, 12); n > 0; --n) s += segment();
    return s;
  };
}

async function fuzzOne(name, jsonPath, outDir, count, seed) {
  const tok = Tokenizer.fromFile(jsonPath);
  const spec = JSON.parse(fs.readFileSync(jsonPath, 'utf8'));
  const specials = (spec.added_tokens || []).map((t) => t.content).slice(0, 64);
  const gen = makeGenerator(rng(seed), specials);
  const texts = [];
  for (let i = 0; i < count; ++i) texts.push(gen());
  const lines = [];
  for (let i = 0; i < texts.length; i += 500) {
    const batch = texts.slice(i, i + 500);
    const encodings = await tok.encodeBatch(batch, { addSpecialTokens: false });
    const ids = encodings.map((e) => e.getIds());
    const withSpecial = (await tok.encodeBatch(batch, { addSpecialTokens: true })).map((e) => e.getIds());
    const decoded = await tok.decodeBatch(ids, false);
    const skipped = await tok.decodeBatch(ids, true);
    for (let k = 0; k < batch.length; ++k) {
      lines.push(JSON.stringify({ text: batch[k], ids: ids[k], ids_special: withSpecial[k], decoded: decoded[k],
        decoded_skip: skipped[k] }));
    }
  }
  fs.writeFileSync(path.join(outDir, `${name}.jsonl`), lines.join('\n') + '\n');
}

async function main() {
  const args = parseArgs();
  fs.mkdirSync(args.out, { recursive: true });
  const targets = ['qwen3', 'deepseek_v3', 'llama3', 'gptoss'].map((n) => [n, path.join(args.data, n, 'tokenizer.json')]);
  const toy = JSON.parse(fs.readFileSync(path.join(args.data, 'toy_tokenizer', 'tokenizer.json'), 'utf8'));
  for (const [name, spec] of Object.entries(syntheticTokenizers(toy))) {
    const dir = path.join(args.out, name);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(spec));
    targets.push([name, path.join(dir, 'tokenizer.json')]);
  }
  const manifest = [];
  for (const [i, [name, jsonPath]] of targets.entries()) {
    await fuzzOne(name, jsonPath, args.out, args.count, args.seed + i);
    manifest.push({ name, tokenizer: jsonPath, cases: path.join(args.out, `${name}.jsonl`) });
  }
  fs.writeFileSync(path.join(args.out, 'manifest.json'), JSON.stringify(manifest, null, 1));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
