// The sequences of a RecurrentMeta as host ranges, checked against the rows and the state slots.
#pragma once

#include <cstdint>

#include "backend/cpu/common.h"

namespace ft::cpu {

struct SeqRange {
  int64_t begin = 0, end = 0, slot = 0;
  bool fresh = false;  // the batch holds the sequence's first tokens: start from a zero state
};

// Checks every sequence range and slot; a malformed meta is an error.
inline Status check_recurrent_meta(const char* op, const RecurrentMeta& m, int64_t n_rows, int64_t n_slots) {
  const int32_t* qs = m.q_start.ptr<const int32_t>();
  if (m.n_seq < 0 || qs[0] != 0 || qs[m.n_seq] != n_rows) return shape_error(op, "q_start does not cover the rows");
  for (int64_t s = 0; s < m.n_seq; ++s) {
    const int32_t slot = m.state_slots.ptr<const int32_t>()[s];
    if (qs[s + 1] < qs[s] || slot < 0 || slot >= n_slots) return shape_error(op, "bad sequence range or state slot");
  }
  return ok_status();
}

inline SeqRange seq_range(const RecurrentMeta& m, int64_t s) {
  const int32_t* qs = m.q_start.ptr<const int32_t>();
  return {qs[s], qs[s + 1], m.state_slots.ptr<const int32_t>()[s], m.kv_len.ptr<const int32_t>()[s] == qs[s + 1] - qs[s]};
}

}  // namespace ft::cpu
