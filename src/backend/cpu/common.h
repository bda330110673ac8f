// Helpers shared by the CPU ops: the stream's thread pool, dynamic work sharing, row addressing, checks.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "backend/backend.h"
#include "backend/cpu/kernels.h"

namespace ft::cpu {

inline ThreadPool* pool_of(Stream& s) { return static_cast<HostStream&>(s).pool(); }
inline int n_threads_of(Stream& s) { return pool_of(s) ? pool_of(s)->n_threads() : 1; }

// fn(thread, begin, end) over [0, n) in contiguous ranges that are multiples of grain. The std::function
// holds a reference to fn, so nothing is allocated.
template <class F>
void parallel_for(Stream& s, int64_t n, int64_t grain, F&& fn) {
  ThreadPool* pool = pool_of(s);
  if (pool == nullptr) {
    if (n > 0) fn(0, int64_t{0}, n);
    return;
  }
  const std::function<void(int, int64_t, int64_t)> f = std::ref(fn);
  pool->parallel_for(n, f, grain);
}

// fn(item) for item in [0, n), handed out one at a time to whichever thread is free (uneven items).
template <class F>
void parallel_items(Stream& s, int64_t n, F&& fn) {
  std::atomic<int64_t> next{0};
  auto worker = [&](int, int64_t, int64_t) {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
         i = next.fetch_add(1, std::memory_order_relaxed))
      fn(i);
  };
  parallel_for(s, n_threads_of(s), 1, worker);
}

// Element offset of innermost row `row` of t, the row index running over all outer dims in order.
inline int64_t row_offset(const Tensor& t, int64_t row) {
  int64_t off = 0;
  for (int d = t.ndim - 2; d >= 0; --d) {
    off += (row % t.shape[d]) * t.stride[d];
    row /= t.shape[d];
  }
  return off;
}

template <class T>
T* row_ptr(const Tensor& t, int64_t row) {
  return t.ptr<T>() + row_offset(t, row);
}

inline bool is_f32_or_bf16(DType t) { return t == DType::kF32 || t == DType::kBF16; }

inline Status dtype_error(const char* op, const char* what, const Tensor& t) {
  return unsupported(std::string("cpu ") + op + ": " + what + " " + t.shape_string() + " is not supported");
}

inline Status shape_error(const char* op, const std::string& what) {
  return invalid_argument(std::string("cpu ") + op + ": " + what);
}

}  // namespace ft::cpu
