// Synthetic tokenizer.json variants that exercise components the four real tokenizers do not use
// (normalizers, split behaviours, Metaspace, byte fallback, unk, added-token flags, templates).
'use strict';

function added(id, content, opts = {}) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true, ...opts };
}

// The byte-level toy tokenizer with other components swapped in.
function fromToy(toy, parts) {
  const t = JSON.parse(JSON.stringify(toy));
  Object.assign(t, parts);
  return t;
}

// A SentencePiece-style BPE: "<0xXX>" byte tokens, single characters and merges that build a few words.
function spModel(opts) {
  const vocab = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; ++b) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = 3 + b;
  const chars = '▁abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?\'"-()的是一';
  for (const c of chars) vocab[c] = Object.keys(vocab).length;
  const merges = [];
  const words = ['▁the', '▁The', '▁and', 'ing', '▁a', 'er', '▁of', '▁to', 'in', '▁in', '▁is', 'on', '▁tokenizer',
    '▁hello', '▁world', 'ed', 'he', '▁HELLO', '▁don', "'t", "'s", '▁Mixture', '▁Experts', '▁是的', '12', '▁1'];
  for (const w of words) {
    const cs = Array.from(w);
    let cur = cs[0];
    for (const c of cs.slice(1)) {
      const next = cur + c;
      if (!(next in vocab)) {
        merges.push([cur, c]);
        vocab[next] = Object.keys(vocab).length;
      }
      cur = next;
    }
  }
  vocab['▁xyz'] = Object.keys(vocab).length;  // reachable only through ignore_merges
  return {
    type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null,
    fuse_unk: opts.fuse_unk, byte_fallback: opts.byte_fallback, ignore_merges: opts.ignore_merges, vocab, merges,
  };
}

function syntheticTokenizers(toy) {
  const n = 512;  // first id after the toy tokenizer's vocab and specials
  const spDecoder = {
    type: 'Sequence',
    decoders: [
      { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
      { type: 'ByteFallback' },
      { type: 'Fuse' },
      { type: 'Strip', content: ' ', start: 1, stop: 0 },
    ],
  };
  const spWithFallback = spModel({ byte_fallback: true, fuse_unk: true, ignore_merges: false });
  const spWithUnk = spModel({ byte_fallback: false, fuse_unk: false, ignore_merges: true });
  const m = Object.keys(spWithFallback.vocab).length;  // added tokens take the ids after the vocab
  const spAdded = [added(0, '<unk>'), added(1, '<s>'), added(2, '</s>'),
    added(m, '[INST]'), added(m + 1, '<tool>', { rstrip: true, special: false }), added(m + 2, '</tool>', { lstrip: true })];
  return {
    syn_normalizers: fromToy(toy, {
      normalizer: {
        type: 'Sequence',
        normalizers: [
          { type: 'NFKD' }, { type: 'Lowercase' },
          { type: 'Replace', pattern: { String: '  ' }, content: ' ' },
          { type: 'Replace', pattern: { Regex: '[0-9]{3,}' }, content: '#' },
          { type: 'Strip', strip_left: true, strip_right: true },
          { type: 'Prepend', prepend: '§' },
        ],
      },
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [{ type: 'Digits', individual_digits: false }, { type: 'Punctuation', behavior: 'Isolated' },
          { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true }],
      },
      added_tokens: [...toy.added_tokens, added(n, '<mask>', { lstrip: true, rstrip: true }),
        added(n + 1, 'hello', { single_word: true, normalized: true, special: false }),
        added(n + 2, 'ﬁne', { normalized: true, special: false })],
    }),
    syn_nfc_splits: fromToy(toy, {
      normalizer: { type: 'NFC' },
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [
          { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithPrevious', invert: false },
          { type: 'Split', pattern: { Regex: '\\p{N}' }, behavior: 'Contiguous', invert: false },
          { type: 'Split', pattern: { Regex: '[\\p{P}\\p{S}]' }, behavior: 'MergedWithNext', invert: false },
          { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
        ],
      },
    }),
    syn_invert_digits: fromToy(toy, {
      normalizer: { type: 'NFKC' },
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [
          { type: 'Split', pattern: { Regex: '\\p{L}+' }, behavior: 'MergedWithPrevious', invert: true },
          { type: 'Split', pattern: { Regex: '\\s' }, behavior: 'Removed', invert: false },
          { type: 'Digits', individual_digits: true },
          { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: false },
        ],
      },
    }),
    syn_whitespace: fromToy(toy, {
      normalizer: { type: 'Lowercase' },
      pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Whitespace' }, { type: 'ByteLevel', use_regex: false, add_prefix_space: false, trim_offsets: false }] },
    }),
    syn_metaspace: fromToy(toy, {
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [{ type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: true },
          { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }],
      },
      decoder: { type: 'Sequence', decoders: [{ type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }, { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: true }] },
    }),
    syn_byte_fallback: {
      version: '1.0', truncation: null, padding: null, added_tokens: spAdded,
      normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
      pre_tokenizer: null,
      post_processor: {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
        pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
        special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } },
      },
      decoder: spDecoder,
      model: spWithFallback,
    },
    syn_unk_metaspace: {
      version: '1.0', truncation: null, padding: null, added_tokens: spAdded,
      normalizer: null,
      pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
      post_processor: null,
      decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
      model: spWithUnk,
    },
  };
}

module.exports = { syntheticTokenizers };
