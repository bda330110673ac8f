// Batches for the linear-attention op tests: sequences of given lengths in shuffled state slots, the first one
// fresh (its first tokens) and the others continuing from the state a previous batch left.
#pragma once

#include <sstream>
#include <string>
#include <vector>

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

}  // namespace ft::test
