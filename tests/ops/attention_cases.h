// Paged attention problems shared by the cpu and cuda op tests: sequences with different query and kv counts,
// a shuffled page table wider than any sequence needs, random q / k / v, and the ref op's float64 answer.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "op_harness.h"

namespace ft::test {

struct AttnCase {
  int64_t n_head, n_kv, hd, page_size, window;
  bool sinks;
  DType cache;
  // The values are the keys' first hd * 8 / 9 dims (multi-head latent attention's cache: 576-wide keys, 512-wide
  // values): v_cache a view of k_cache.
  bool values_in_keys = false;
};

struct AttnProblem {
  Tensor q, k_cache, v_cache, want;  // want: the ref op's output [n, n_head, hd_v] f64
  PagedAttentionMeta meta;
  AttentionParams params;
  int64_t n = 0, hd_v = 0;
  std::string label;  // the case, for failure messages
};

// seqs: {queries this step, kv length after it} per sequence; q in dtype `act`. hd 80 makes hd_v 64 (hd_k != hd_v), as
// does hd 72 with values_in_keys.
// The page table is extra_pages wider than the longest sequence needs, as the model's (a server's context length).
inline AttnProblem make_attention_problem(const OpTable& ref, Stream& ref_stream, const AttnCase& c, DType act,
                                          const std::vector<std::pair<int64_t, int64_t>>& seqs,
                                          int64_t extra_pages = 3) {
  AttnProblem a;
  const int64_t n_seq = static_cast<int64_t>(seqs.size());
  int64_t max_pages = 0, total_pages = 0;
  for (auto [nq, kv] : seqs) {
    a.n += nq;
    max_pages = std::max(max_pages, (kv + c.page_size - 1) / c.page_size);
    total_pages += (kv + c.page_size - 1) / c.page_size;
  }
  max_pages += extra_pages;
  a.hd_v = c.values_in_keys ? c.hd * 8 / 9 : c.hd == 80 ? 64 : c.hd;
  a.q = make_tensor(act, {a.n, c.n_head, c.hd});
  a.k_cache = make_tensor(c.cache, {total_pages + 2, c.page_size, c.n_kv, c.hd});
  a.v_cache = c.values_in_keys ? a.k_cache.slice(3, 0, a.hd_v)
                               : make_tensor(c.cache, {total_pages + 2, c.page_size, c.n_kv, a.hd_v});
  fill_normal(a.q, 90), fill_normal(a.k_cache, 91);
  if (!c.values_in_keys) fill_normal(a.v_cache, 92);
  PagedAttentionMeta& meta = a.meta;
  meta.q_start = make_tensor(DType::kI32, {n_seq + 1});
  meta.kv_len = make_tensor(DType::kI32, {n_seq});
  meta.page_table = make_tensor(DType::kI32, {n_seq, max_pages});
  meta.n_seq = n_seq;
  meta.page_size = c.page_size;
  std::vector<int64_t> pages(static_cast<size_t>(total_pages + 2));
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), std::mt19937(93));
  int64_t q0 = 0, next_page = 0;
  for (int64_t s = 0; s < n_seq; ++s) {
    set_value(meta.q_start, s, static_cast<double>(q0));
    set_value(meta.kv_len, s, static_cast<double>(seqs[s].second));
    q0 += seqs[s].first;
    for (int64_t i = 0; i < (seqs[s].second + c.page_size - 1) / c.page_size; ++i)
      set_value(meta.page_table, s * max_pages + i, static_cast<double>(pages[next_page++]));
  }
  set_value(meta.q_start, n_seq, static_cast<double>(a.n));
  a.params.scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
  a.params.window = c.window;
  if (c.sinks) {
    a.params.sinks = make_tensor(DType::kF32, {c.n_head});
    fill_normal(a.params.sinks, 94, 2.0);
  }
  a.want = make_tensor(DType::kF64, {a.n, c.n_head, a.hd_v});
  FT_CHECK(ref.attention(a.q, a.k_cache, a.v_cache, meta, a.want, a.params, ref_stream).ok());
  a.label = "attention " + std::string(dtype_name(act)) + " heads " + std::to_string(c.n_head) + "/" +
            std::to_string(c.n_kv) + " hd " + std::to_string(c.hd) + " page " + std::to_string(c.page_size) +
            " window " + std::to_string(c.window) + (c.sinks ? " sinks " : " ") + dtype_name(c.cache) +
            (c.values_in_keys ? " values in keys" : "");
  return a;
}

}  // namespace ft::test
