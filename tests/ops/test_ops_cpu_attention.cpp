// cpu kv_store and paged causal GQA attention against the ref ops: several sequences with different kv
// lengths (decode rows and prefill chunks mixed), shuffled page tables, page sizes 1 and 16, GQA ratios 1 to
// 8, sliding windows, sinks, f32 and bf16 caches. Tolerances (NMSE): kv_store is an exact copy (0);
// attention rounds q.k and the online softmax in fp32: 1e-10.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "op_harness.h"

namespace ft::test {
namespace {

TEST(OpsCpu, KvStore) {
  OpEnv env;
  for (DType cd : {DType::kF32, DType::kBF16})
    for (int64_t page_size : {1, 16})
      for (int64_t hd : {64, 80}) {
        const int64_t n = 33, n_kv = 2, n_pages = 80 / page_size + 3;
        Tensor k = make_tensor(DType::kF32, {n, n_kv, hd}), v = make_tensor(DType::kF32, {n, n_kv, hd + 16});
        Tensor slots = make_tensor(DType::kI32, {n});
        fill_normal(k, 80), fill_normal(v, 81);
        for (int64_t i = 0; i < n; ++i) set_value(slots, i, static_cast<double>((i * 37 + 5) % (n_pages * page_size)));
        Tensor kw = make_tensor(cd, {n_pages, page_size, n_kv, hd}), vw = make_tensor(cd, {n_pages, page_size, n_kv, hd + 16});
        Tensor kg = make_tensor(cd, {n_pages, page_size, n_kv, hd}), vg = make_tensor(cd, {n_pages, page_size, n_kv, hd + 16});
        ASSERT_TRUE(env.ref.kv_store(k, v, slots, kw, vw, env.ref_stream).ok());
        for_each_isa([&](const std::string& isa) {
          ASSERT_TRUE(env.cpu.kv_store(k, v, slots, kg, vg, env.cpu_stream).ok());
          const std::string what = std::string("kv_store ") + dtype_name(cd) + " page " + std::to_string(page_size) + isa;
          expect_close(kg, kw, 0, what + " k");
          expect_close(vg, vw, 0, what + " v");
        });
      }
}

struct AttnCase {
  int64_t n_head, n_kv, hd, page_size, window;
  bool sinks;
  DType cache;
};

void run_attention(OpEnv& env, const AttnCase& c) {
  // Sequences: {queries this step, kv length after it}: decode rows, a first prefill, a later chunk.
  const std::vector<std::pair<int64_t, int64_t>> seqs = {{1, 1}, {1, 40}, {17, 17}, {5, 70}, {33, 45}};
  const int64_t n_seq = static_cast<int64_t>(seqs.size());
  int64_t n = 0, max_pages = 0, total_pages = 0;
  for (auto [nq, kv] : seqs) {
    n += nq;
    max_pages = std::max(max_pages, (kv + c.page_size - 1) / c.page_size);
    total_pages += (kv + c.page_size - 1) / c.page_size;
  }
  const int64_t hd_v = c.hd == 80 ? 64 : c.hd;  // one case with hd_k != hd_v
  Tensor q = make_tensor(DType::kF32, {n, c.n_head, c.hd});
  Tensor kc = make_tensor(c.cache, {total_pages + 2, c.page_size, c.n_kv, c.hd});
  Tensor vc = make_tensor(c.cache, {total_pages + 2, c.page_size, c.n_kv, hd_v});
  fill_normal(q, 90), fill_normal(kc, 91), fill_normal(vc, 92);
  PagedAttentionMeta meta;
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
  set_value(meta.q_start, n_seq, static_cast<double>(n));
  AttentionParams p;
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
  p.window = c.window;
  if (c.sinks) {
    p.sinks = make_tensor(DType::kF32, {c.n_head});
    fill_normal(p.sinks, 94, 2.0);
  }
  Tensor want = make_tensor(DType::kF64, {n, c.n_head, hd_v}), got = make_tensor(DType::kF32, {n, c.n_head, hd_v});
  ASSERT_TRUE(env.ref.attention(q, kc, vc, meta, want, p, env.ref_stream).ok());
  for_each_isa([&](const std::string& isa) {
    ASSERT_TRUE(env.cpu.attention(q, kc, vc, meta, got, p, env.cpu_stream).ok());
    expect_close(got, want, 1e-10,
                 "attention heads " + std::to_string(c.n_head) + "/" + std::to_string(c.n_kv) + " hd " +
                     std::to_string(c.hd) + " page " + std::to_string(c.page_size) + " window " +
                     std::to_string(c.window) + (c.sinks ? " sinks " : " ") + dtype_name(c.cache) + isa);
  });
}

TEST(OpsCpu, Attention) {
  OpEnv env;
  const AttnCase cases[] = {
      {1, 1, 64, 16, 0, false, DType::kF32},   {2, 1, 64, 1, 0, false, DType::kF32},
      {8, 2, 128, 16, 0, false, DType::kBF16}, {8, 1, 80, 16, 0, false, DType::kF32},
      {16, 2, 64, 16, 7, false, DType::kF32},  {4, 2, 64, 1, 7, true, DType::kBF16},
      {8, 1, 64, 16, 0, true, DType::kF32},    {6, 2, 128, 16, 20, true, DType::kF32},
  };
  for (const AttnCase& c : cases) run_attention(env, c);
}

}  // namespace
}  // namespace ft::test
