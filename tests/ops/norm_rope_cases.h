// qk_norm_rope_store problems shared by the cpu and cuda op tests. q, k and v are views of one fused projection row,
// as the models lay them out: Qwen3 (q [n, 32, 128], k and v [n, 4, 128], full rotary, plain norm), Qwen3.5's gated
// attention (query heads interleaved with their output gates, head_dim 256, 64 rotary dims, zero-centred norm), and
// a small interleaved, partial, scaled rope. Keys and values go to shuffled slots of a paged cache.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "op_harness.h"

namespace ft::test {

struct QkCase {
  const char* name;
  int64_t n_head, n_kv, hd, rot_dim;
  bool gated;  // each query head followed by its gate in the row
  bool zero_centered, interleaved;
  float factor;
  bool normed = true;  // false: no q/k norm weights (gpt-oss), rope and the store alone
};

inline constexpr QkCase kQkCases[] = {
    {"qwen3", 32, 4, 128, 128, false, false, false, 1.0f},
    {"qwen3.5", 16, 2, 256, 64, true, true, false, 1.0f},
    {"interleaved partial", 3, 1, 80, 40, false, false, true, 1.3f},
    {"gpt-oss, no q/k norm", 64, 8, 64, 64, false, false, false, 1.3466f, false},
};

struct QkProblem {
  Tensor rows;     // [n, width] act: queries (and gates), keys, values
  Tensor q, k, v;  // [n, n_head, hd], [n, n_kv, hd], [n, n_kv, hd] views of rows
  Tensor q_w, k_w, positions, inv_freq, slots;
  Tensor k_cache, v_cache;  // [n_pages, page_size, n_kv, hd], random: the slots not stored to keep their values
  RmsNormParams norm;
  RopeParams rope;
  std::string label;
};

// The view `view` of one buffer, over another of the same layout (a copy of it, or its device copy).
inline Tensor rebase(const Tensor& view, const Tensor& base) {
  Tensor t = view;
  t.buffer = base.buffer;
  return t;
}

// [n, heads, hd] at column col of rows, heads head_stride apart.
inline Tensor head_view(const Tensor& rows, int64_t col, int64_t heads, int64_t hd, int64_t head_stride) {
  Tensor v = rows.slice(1, col, (heads - 1) * head_stride + hd);
  v.ndim = 3;
  v.shape = {rows.dim(0), heads, hd, 0};
  v.stride = {rows.stride[0], head_stride, 1, 0};
  return v;
}

// A host copy of a contiguous host tensor (same dtype).
inline Tensor copy_of(const Tensor& t) {
  FT_CHECK(t.is_contiguous());
  auto buf = allocate_host(t.nbytes(), false);
  FT_CHECK(buf.ok());
  Tensor c = t;
  c.buffer = std::move(buf).value();
  c.offset = 0;
  std::memcpy(c.data(), t.data(), t.nbytes());
  return c;
}

inline QkProblem make_qk_problem(const QkCase& c, DType act, DType weight, DType cache, int64_t n) {
  QkProblem p;
  const int64_t q_cols = (c.gated ? 2 : 1) * c.n_head * c.hd, kv_cols = c.n_kv * c.hd;
  p.rows = make_tensor(act, {n, q_cols + 2 * kv_cols});
  fill_normal(p.rows, 80 + n + c.hd, 2.0);
  p.q = head_view(p.rows, 0, c.n_head, c.hd, (c.gated ? 2 : 1) * c.hd);
  p.k = head_view(p.rows, q_cols, c.n_kv, c.hd, c.hd);
  p.v = head_view(p.rows, q_cols + kv_cols, c.n_kv, c.hd, c.hd);
  if (c.normed) {
    p.q_w = make_tensor(weight, {c.hd});
    p.k_w = make_tensor(weight, {c.hd});
    fill_normal(p.q_w, 81, c.zero_centered ? 0.1 : 1.0), fill_normal(p.k_w, 82, c.zero_centered ? 0.1 : 1.0);
  }
  p.positions = make_tensor(DType::kI32, {n});
  const int positions[] = {0, 1, 5, 127, 4096, 31999, 131071};
  for (int64_t i = 0; i < n; ++i) set_value(p.positions, i, positions[i % 7] + i / 7);
  p.inv_freq = make_tensor(DType::kF32, {c.rot_dim / 2});
  for (int64_t i = 0; i < c.rot_dim / 2; ++i)
    set_value(p.inv_freq, i,
              static_cast<float>(1.0 / std::pow(1e6, 2.0 * static_cast<double>(i) / static_cast<double>(c.rot_dim))));
  const int64_t page_size = 16, n_pages = n / page_size + 2;
  p.k_cache = make_tensor(cache, {n_pages, page_size, c.n_kv, c.hd});
  p.v_cache = make_tensor(cache, {n_pages, page_size, c.n_kv, c.hd});
  fill_normal(p.k_cache, 83), fill_normal(p.v_cache, 84);
  std::vector<int64_t> slot(static_cast<size_t>(n_pages * page_size));
  std::iota(slot.begin(), slot.end(), 0);
  std::shuffle(slot.begin(), slot.end(), std::mt19937(85));
  p.slots = make_tensor(DType::kI32, {n});
  for (int64_t i = 0; i < n; ++i) set_value(p.slots, i, static_cast<double>(slot[static_cast<size_t>(i)]));
  p.norm = {1e-6f, c.zero_centered};
  p.rope = {c.rot_dim, c.interleaved, c.factor};
  p.label = std::string(c.name) + " act " + dtype_name(act) + " w " + dtype_name(weight) + " cache " +
            dtype_name(cache) + " n=" + std::to_string(n);
  return p;
}

// A problem's tensors in one memory (host copies, or device copies): the op writes rows and the caches.
struct QkTensors {
  Tensor rows, k_cache, v_cache;
  Tensor q_w, k_w, positions, inv_freq, slots;
  Tensor q_view, k_view, v_view;  // the problem's views, of its own rows

  Tensor q() const { return rebase(q_view, rows); }
  Tensor k() const { return rebase(k_view, rows); }
  Tensor v() const { return rebase(v_view, rows); }
};

// Host copies of what the op writes; the inputs it only reads are the problem's own.
inline QkTensors host_copies(const QkProblem& p) {
  return {copy_of(p.rows),
          copy_of(p.k_cache),
          copy_of(p.v_cache),
          p.q_w,
          p.k_w,
          p.positions,
          p.inv_freq,
          p.slots,
          p.q,
          p.k,
          p.v};
}

// qk_norm_rope_store of `ops` on t, in place.
inline Status run_qk_fused(const OpTable& ops, Stream& s, const QkProblem& p, const QkTensors& t) {
  return ops.qk_norm_rope_store(t.q(), t.k(), t.v(), t.q_w, t.k_w, t.positions, t.inv_freq, t.slots, t.k_cache,
                                t.v_cache, p.norm, p.rope, s);
}

// The ops qk_norm_rope_store fuses, of `ops` on t, in place: rms_norm of q and k (where the problem has norm
// weights), rope of both, kv_store.
inline Status run_qk_unfused(const OpTable& ops, Stream& s, const QkProblem& p, const QkTensors& t) {
  const Tensor q = t.q(), k = t.k();
  if (t.q_w.defined()) {
    FT_RETURN_IF_ERROR(ops.rms_norm(q, t.q_w, q, p.norm, s));
    FT_RETURN_IF_ERROR(ops.rms_norm(k, t.k_w, k, p.norm, s));
  }
  FT_RETURN_IF_ERROR(ops.rope(q, t.positions, t.inv_freq, q, p.rope, s));
  FT_RETURN_IF_ERROR(ops.rope(k, t.positions, t.inv_freq, k, p.rope, s));
  return ops.kv_store(k, t.v(), t.slots, t.k_cache, t.v_cache, s);
}

}  // namespace ft::test
