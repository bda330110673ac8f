// A RecurrentMeta on the device: each sequence's rows, state slot and freshness read from device memory inside
// the kernels (so host-known shapes alone fix the launch), and the host-side checks of the meta tensors.
#pragma once

#include "backend/cuda/common.cuh"

namespace ft::cuda {

struct DeviceMeta {
  const int32_t* q_start;      // [n_seq + 1]
  const int32_t* kv_len;       // [n_seq]
  const int32_t* state_slots;  // [n_seq]
  int64_t n_rows = 0, n_slots = 0;
};

struct SeqRange {
  int64_t begin = 0, end = 0, slot = 0;
  bool fresh = false;  // the batch holds the sequence's first tokens: start from a zero state
  bool valid = false;  // rows within [0, n_rows] in order and the slot within [0, n_slots)
};

// Sequence s of the batch. A malformed entry (which the device cannot report) comes back !valid and its
// block does nothing.
__device__ __forceinline__ SeqRange seq_range(const DeviceMeta& m, int64_t s) {
  SeqRange r;
  r.begin = m.q_start[s], r.end = m.q_start[s + 1], r.slot = m.state_slots[s];
  r.fresh = m.kv_len[s] == r.end - r.begin;
  r.valid = r.begin >= 0 && r.end >= r.begin && r.end <= m.n_rows && r.slot >= 0 && r.slot < m.n_slots;
  return r;
}

// The meta's tensors are i32 device tensors with n_seq + 1 starts and n_seq lengths and slots.
inline Status check_meta(const char* op, const RecurrentMeta& m, int64_t n_rows, int64_t n_slots, DeviceMeta& dm) {
  FT_RETURN_IF_ERROR(device_check(op, {&m.q_start, &m.kv_len, &m.state_slots}));
  for (const Tensor* t : {&m.q_start, &m.kv_len, &m.state_slots})
    if (!t->defined() || t->dtype != DType::kI32 || !t->is_contiguous()) return dtype_error(op, "recurrent meta", *t);
  if (m.n_seq < 0 || m.q_start.numel() < m.n_seq + 1 || m.kv_len.numel() < m.n_seq ||
      m.state_slots.numel() < m.n_seq)
    return shape_error(op, "recurrent meta does not cover n_seq sequences");
  dm = {m.q_start.ptr<const int32_t>(), m.kv_len.ptr<const int32_t>(), m.state_slots.ptr<const int32_t>(), n_rows,
        n_slots};
  return ok_status();
}

}  // namespace ft::cuda
