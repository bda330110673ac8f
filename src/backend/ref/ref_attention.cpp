// Reference paged KV store and causal GQA attention (sliding window, sinks).
#include <cmath>
#include <vector>

#include "backend/ref/ref_access.h"
#include "backend/ref/ref_ops.h"

namespace ft::ref {

Status kv_store(const Tensor& k, const Tensor& v, const Tensor& slots, const Tensor& k_cache,
                const Tensor& v_cache, Stream&) {
  const int64_t n = k.dim(0), n_kv = k.dim(1), page_size = k_cache.dim(1);
  const int64_t n_slots = k_cache.dim(0) * page_size;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t slot = get_int(slots, t);
    if (slot < 0 || slot >= n_slots) return invalid_argument("kv_store: slot out of range");
    const int64_t page = slot / page_size, row = slot % page_size;
    for (int64_t h = 0; h < n_kv; ++h) {
      for (int64_t i = 0; i < k.dim(2); ++i) set(k_cache, get(k, t, h, i), page, row, h, i);
      if (v.defined())
        for (int64_t i = 0; i < v.dim(2); ++i) set(v_cache, get(v, t, h, i), page, row, h, i);
    }
  }
  return ok_status();
}

Status attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const PagedAttentionMeta& meta,
                 const Tensor& out, const AttentionParams& p, Stream&) {
  const int64_t n_head = q.dim(1), hd_k = q.dim(2), n_kv = k_cache.dim(2), hd_v = v_cache.dim(3);
  if (n_kv == 0 || n_head % n_kv) return invalid_argument("attention: heads");
  const int64_t group = n_head / n_kv, ps = meta.page_size;
  std::vector<double> scores;
  for (int64_t s = 0; s < meta.n_seq; ++s) {
    const int64_t q0 = get_int(meta.q_start, s), q1 = get_int(meta.q_start, s + 1);
    const int64_t kv_len = get_int(meta.kv_len, s);
    for (int64_t t = q0; t < q1; ++t) {
      const int64_t pos = kv_len - (q1 - q0) + (t - q0);
      const int64_t first = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
      for (int64_t h = 0; h < n_head; ++h) {
        const int64_t kvh = h / group;
        scores.assign(static_cast<size_t>(pos - first + 1), 0.0);
        double mx = p.sinks.defined() ? get(p.sinks, h) : -INFINITY;
        for (int64_t j = first; j <= pos; ++j) {
          const int64_t page = get_int(meta.page_table, s, j / ps), row = j % ps;
          double dot = 0;
          for (int64_t i = 0; i < hd_k; ++i) dot += get(q, t, h, i) * get(k_cache, page, row, kvh, i);
          scores[j - first] = dot * p.scale;
          mx = std::max(mx, scores[j - first]);
        }
        double denom = p.sinks.defined() ? std::exp(get(p.sinks, h) - mx) : 0.0;
        for (auto& sc : scores) denom += (sc = std::exp(sc - mx));
        for (int64_t i = 0; i < hd_v; ++i) {
          double acc = 0;
          for (int64_t j = first; j <= pos; ++j) {
            const int64_t page = get_int(meta.page_table, s, j / ps), row = j % ps;
            acc += scores[j - first] * get(v_cache, page, row, kvh, i);
          }
          set(out, acc / denom, t, h, i);
        }
      }
    }
  }
  return ok_status();
}

}  // namespace ft::ref
