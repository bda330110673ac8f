// Batches for the linear-attention op tests: sequences of given lengths in shuffled state slots, the first one
// fresh (its first tokens) and the others continuing from the state a previous batch left.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "op_harness.h"

namespace ft::test {

struct RecurrentBatch {
  Tensor q_start, kv_len, slots;  // [n_seq + 1], [n_seq], [n_seq] i32 host tensors
  RecurrentMeta meta;
  int64_t n_rows = 0;
};

// Sequences with the given lengths in slots 2, 0, 1, ...; the first starts fresh, the others have 11 tokens before.
inline RecurrentBatch make_recurrent_batch(const std::vector<int64_t>& lengths) {
  RecurrentBatch b;
  const int64_t n_seq = static_cast<int64_t>(lengths.size());
  b.q_start = make_tensor(DType::kI32, {n_seq + 1});
  b.kv_len = make_tensor(DType::kI32, {n_seq});
  b.slots = make_tensor(DType::kI32, {n_seq});
  for (int64_t s = 0; s < n_seq; ++s) {
    set_value(b.q_start, s, static_cast<double>(b.n_rows));
    b.n_rows += lengths[static_cast<size_t>(s)];
    set_value(b.kv_len, s, static_cast<double>(lengths[static_cast<size_t>(s)] + (s == 0 ? 0 : 11)));
    set_value(b.slots, s, static_cast<double>((s + 2) % (n_seq + 1)));
  }
  set_value(b.q_start, n_seq, static_cast<double>(b.n_rows));
  b.meta = {b.q_start, b.kv_len, b.slots, n_seq};
  return b;
}

// Lengths 1, 7 and 130 (three chunks of 64, the last partial), alone and mixed.
inline const std::vector<std::vector<int64_t>> kRecurrentBatches = {{1}, {7, 1, 130}, {130, 7}};

inline std::string lengths_name(const std::vector<int64_t>& l) {
  std::ostringstream os;
  os << " lengths";
  for (int64_t n : l) os << ' ' << n;
  return os.str();
}

struct DeltaShape {
  int64_t n_k, n_v, dk, dv;
};

// [n, h, d] heads starting at column `col` of the rows of `t` (a column slice of one projection row, as the model
// passes q, k and v).
inline Tensor head_columns(const Tensor& t, int64_t col, int64_t h, int64_t d) {
  Tensor v = t.slice(1, col, h * d);
  v.ndim = 3;
  v.shape = {t.dim(0), h, d, 0};
  v.stride = {t.stride[0], d, 1, 0};
  return v;
}

// A gated delta rule problem over batch `b`: q, k, v column slices of one conv output row [n, 2 n_k dk + n_v dv]
// and a, b of one projection row [n, 2 n_v] (activations in `act`), the gate parameters in `pd`, a random initial
// state, and the ref step op's float64 output and final state.
struct DeltaProblem {
  Tensor qkv, ab, a_log, dt_bias, state0, want, want_state;
  Tensor q, k, v, a, b;  // views of qkv and ab
};

inline DeltaProblem make_delta_problem(const OpTable& ref, Stream& ref_stream, const DeltaShape& sh, DType act,
                                       DType pd, const RecurrentBatch& batch, int64_t n_slots) {
  DeltaProblem d;
  const int64_t n = batch.n_rows;
  d.qkv = make_tensor(act, {n, 2 * sh.n_k * sh.dk + sh.n_v * sh.dv});
  d.ab = make_tensor(act, {n, 2 * sh.n_v});
  d.a_log = make_tensor(pd, {sh.n_v});
  d.dt_bias = make_tensor(pd, {sh.n_v});
  fill_normal(d.qkv, 90 + static_cast<uint64_t>(sh.dk)), fill_normal(d.ab, 91, 2.0), fill_normal(d.a_log, 92, 1.5);
  fill_normal(d.dt_bias, 93);
  d.q = head_columns(d.qkv, 0, sh.n_k, sh.dk);
  d.k = head_columns(d.qkv, sh.n_k * sh.dk, sh.n_k, sh.dk);
  d.v = head_columns(d.qkv, 2 * sh.n_k * sh.dk, sh.n_v, sh.dv);
  d.a = d.ab.slice(1, 0, sh.n_v);
  d.b = d.ab.slice(1, sh.n_v, sh.n_v);
  d.state0 = make_tensor(DType::kF32, {n_slots, sh.n_v, sh.dk, sh.dv});
  fill_normal(d.state0, 94, 0.3);
  d.want = make_tensor(DType::kF64, {n, sh.n_v, sh.dv});
  d.want_state = make_tensor(DType::kF32, {n_slots, sh.n_v, sh.dk, sh.dv});
  copy_values(d.state0, d.want_state);
  const GatedDeltaParams p{d.a_log, d.dt_bias, 1e-6f};
  FT_CHECK(ref.gated_delta_step(d.q, d.k, d.v, d.a, d.b, batch.meta, d.want_state, d.want, p, ref_stream).ok());
  return d;
}

}  // namespace ft::test
