// cuda kv_store, paged attention, moe_route and moe_experts against the ref ops, f32 and bf16 activations;
// skipped without a GPU. Attention: several sequences with different kv lengths (decode rows and prefill
// chunks mixed), shuffled page tables, page sizes 1 and 16, GQA ratios 1 to 8, sliding windows, sinks, hd_k
// != hd_v, the split-KV decode path (one row per sequence), the single-split prefill path and the tensor-core prefill
// path (bf16 q and cache, head dim 64 or 128, prompts of several 64-row tiles). Tolerances
// (NMSE): kv_store is an exact copy (0); f32 attention rounds q.k and the online softmax in fp32: 1e-10; f32
// experts are two fp32 GEMMs: 1e-9; router ids exact and weights 1e-12; bf16 outputs kBf16Tol.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "test_ops_cuda_env.h"

namespace ft::test {
namespace {

TEST(OpsCuda, KvStore) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  for (DType ad : {DType::kF32, DType::kBF16})
    for (DType cd : {DType::kF32, DType::kBF16})
      for (int64_t page_size : {1, 16})
        for (int64_t hd : {64, 80}) {
          const int64_t n = 33, n_kv = 2, n_pages = 80 / page_size + 3;
          Tensor k = make_tensor(ad, {n, n_kv, hd}), v = make_tensor(ad, {n, n_kv, hd + 16});
          Tensor slots = make_tensor(DType::kI32, {n});
          fill_normal(k, 80), fill_normal(v, 81);
          for (int64_t i = 0; i < n; ++i) set_value(slots, i, static_cast<double>((i * 37 + 5) % (n_pages * page_size)));
          Tensor kw = make_tensor(cd, {n_pages, page_size, n_kv, hd}), vw = make_tensor(cd, {n_pages, page_size, n_kv, hd + 16});
          ASSERT_TRUE(env.ref.kv_store(k, v, slots, kw, vw, env.ref_stream).ok());
          const Tensor kg = env.empty(cd, {n_pages, page_size, n_kv, hd}), vg = env.empty(cd, {n_pages, page_size, n_kv, hd + 16});
          ASSERT_TRUE(env.ops().kv_store(env.up(k), env.up(v), env.up(slots), kg, vg, env.stream()).ok());
          const std::string what = std::string("kv_store ") + dtype_name(ad) + " -> " + dtype_name(cd) + " page " +
                                   std::to_string(page_size);
          expect_close(env.down(kg), kw, 0, what + " k");
          expect_close(env.down(vg), vw, 0, what + " v");
        }
}

struct AttnCase {
  int64_t n_head, n_kv, hd, page_size, window;
  bool sinks;
  DType cache;
};

// seqs: {queries this step, kv length after it}.
void run_attention(CudaEnv& env, const AttnCase& c, DType ad, const std::vector<std::pair<int64_t, int64_t>>& seqs,
                   const std::string& label) {
  const int64_t n_seq = static_cast<int64_t>(seqs.size());
  int64_t n = 0, max_pages = 0, total_pages = 0;
  for (auto [nq, kv] : seqs) {
    n += nq;
    max_pages = std::max(max_pages, (kv + c.page_size - 1) / c.page_size);
    total_pages += (kv + c.page_size - 1) / c.page_size;
  }
  max_pages += 3;  // a wider page table than any sequence needs, as the model's
  const int64_t hd_v = c.hd == 80 ? 64 : c.hd;  // one case with hd_k != hd_v
  Tensor q = make_tensor(ad, {n, c.n_head, c.hd});
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
  Tensor want = make_tensor(DType::kF64, {n, c.n_head, hd_v});
  ASSERT_TRUE(env.ref.attention(q, kc, vc, meta, want, p, env.ref_stream).ok());
  PagedAttentionMeta dmeta = meta;
  dmeta.q_start = env.up(meta.q_start), dmeta.kv_len = env.up(meta.kv_len), dmeta.page_table = env.up(meta.page_table);
  AttentionParams dp = p;
  if (c.sinks) dp.sinks = env.up(p.sinks);
  const Tensor got = env.empty(ad, {n, c.n_head, hd_v});
  ASSERT_TRUE(env.ops().attention(env.up(q), env.up(kc), env.up(vc), dmeta, got, dp, env.stream()).ok());
  expect_close(env.down(got), want, ad == DType::kBF16 ? kBf16Tol : 1e-10,
               label + " attention " + dtype_name(ad) + " heads " + std::to_string(c.n_head) + "/" +
                   std::to_string(c.n_kv) + " hd " + std::to_string(c.hd) + " page " + std::to_string(c.page_size) +
                   " window " + std::to_string(c.window) + (c.sinks ? " sinks " : " ") + dtype_name(c.cache));
}

TEST(OpsCuda, Attention) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  const AttnCase cases[] = {
      {1, 1, 64, 16, 0, false, DType::kF32},   {2, 1, 64, 1, 0, false, DType::kF32},
      {8, 2, 128, 16, 0, false, DType::kBF16}, {8, 1, 80, 16, 0, false, DType::kF32},
      {16, 2, 64, 16, 7, false, DType::kF32},  {4, 2, 64, 1, 7, true, DType::kBF16},
      {8, 1, 64, 16, 0, true, DType::kF32},    {6, 2, 128, 16, 20, true, DType::kF32},
      {32, 4, 128, 16, 0, false, DType::kBF16},
  };
  for (DType ad : {DType::kF32, DType::kBF16})
    for (const AttnCase& c : cases) {
      run_attention(env, c, ad, {{1, 1}, {1, 40}, {17, 17}, {5, 70}, {33, 45}}, "mixed");
      run_attention(env, c, ad, {{1, 300}, {1, 1}, {1, 777}}, "decode");
      // Several 64-row tiles per sequence, after a cached prefix and from scratch (the bf16 tensor-core path).
      run_attention(env, c, ad, {{200, 260}, {70, 70}, {1, 5}}, "long prefill");
    }
}

struct RouteCase {
  int64_t n_expert, k, n_group, topk_group;
  RouterScoring scoring;
  bool bias, norm;
  float scale;
};

TEST(OpsCuda, MoeRoute) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  const RouteCase cases[] = {
      {8, 1, 1, 1, RouterScoring::kSoftmax, false, false, 1.0f},
      {8, 2, 1, 1, RouterScoring::kSoftmax, false, true, 1.0f},
      {128, 8, 1, 1, RouterScoring::kSoftmax, false, true, 1.0f},
      {128, 8, 1, 1, RouterScoring::kSigmoid, true, true, 2.5f},
      {64, 8, 8, 4, RouterScoring::kSigmoid, true, true, 2.5f},
      {128, 8, 8, 3, RouterScoring::kSigmoid, true, false, 1.0f},
      {32, 4, 4, 2, RouterScoring::kSoftmax, true, true, 1.5f},
      {256, 8, 8, 4, RouterScoring::kSigmoid, true, true, 2.5f},
  };
  for (const RouteCase& c : cases)
    for (int64_t n : {1, 7, 33}) {
      Tensor logits = make_tensor(DType::kF32, {n, c.n_expert});
      fill_normal(logits, 100 + c.n_expert + n, 2.0);
      Tensor bias = c.bias ? make_tensor(DType::kF32, {c.n_expert}) : Tensor{};
      if (c.bias) fill_normal(bias, 101, 0.5);
      const MoeRouteParams p{c.scoring, c.k, c.n_group, c.topk_group, c.norm, c.scale};
      Tensor ids_want = make_tensor(DType::kI32, {n, c.k}), w_want = make_tensor(DType::kF64, {n, c.k});
      ASSERT_TRUE(env.ref.moe_route(logits, bias, ids_want, w_want, p, env.ref_stream).ok());
      const Tensor ids_got = env.empty(DType::kI32, {n, c.k}), w_got = env.empty(DType::kF32, {n, c.k});
      ASSERT_TRUE(env.ops().moe_route(env.up(logits), c.bias ? env.up(bias) : Tensor{}, ids_got, w_got, p, env.stream()).ok());
      const std::string what = "moe_route E=" + std::to_string(c.n_expert) + " k=" + std::to_string(c.k) + " groups " +
                               std::to_string(c.n_group) + "/" + std::to_string(c.topk_group) +
                               (c.scoring == RouterScoring::kSigmoid ? " sigmoid" : " softmax") + " n=" + std::to_string(n);
      expect_equal_ints(env.down(ids_got), ids_want, what + " ids");
      expect_close(env.down(w_got), w_want, 1e-12, what + " weights");
    }
}

struct ExpertCase {
  int64_t n, n_expert, k, d, inter;
  DType wd;
};

TEST(OpsCuda, MoeExperts) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  // n <= 8: the fused decode GEMVs; larger n: the grouped GEMM. d, inter multiples of 8 take 16-byte loads.
  const ExpertCase cases[] = {
      {1, 8, 1, 64, 32, DType::kF32},     {1, 8, 2, 17, 33, DType::kBF16},   {3, 128, 8, 256, 96, DType::kBF16},
      {7, 8, 2, 64, 48, DType::kBF16},    {33, 8, 2, 64, 48, DType::kF32},   {33, 128, 8, 64, 32, DType::kBF16},
      {33, 8, 8, 100, 40, DType::kBF16},  {70, 16, 4, 96, 72, DType::kBF16}, {2, 128, 8, 2048, 768, DType::kBF16},
      {9, 8, 2, 17, 33, DType::kF32},
  };
  for (DType ad : {DType::kF32, DType::kBF16})
    for (const ExpertCase& c : cases) {
      Tensor x = make_tensor(ad, {c.n, c.d}), ids = make_tensor(DType::kI32, {c.n, c.k});
      Tensor weights = make_tensor(DType::kF32, {c.n, c.k});
      Tensor gate_up = make_tensor(c.wd, {c.n_expert, 2 * c.inter, c.d}), down = make_tensor(c.wd, {c.n_expert, c.d, c.inter});
      fill_normal(x, 110), fill_normal(weights, 111, 0.3), fill_normal(gate_up, 112, 0.2), fill_normal(down, 113, 0.2);
      std::mt19937 rng(114);
      std::vector<int> experts(static_cast<size_t>(c.n_expert));
      std::iota(experts.begin(), experts.end(), 0);
      for (int64_t t = 0; t < c.n; ++t) {
        std::shuffle(experts.begin(), experts.end(), rng);  // k distinct experts per token
        for (int64_t j = 0; j < c.k; ++j) set_value(ids, t * c.k + j, experts[j]);
      }
      Tensor ws_ref = make_tensor(DType::kU8, {static_cast<int64_t>(env.ref.moe_workspace_bytes(c.n, c.k, c.d, c.inter))});
      Tensor want = make_tensor(DType::kF64, {c.n, c.d});
      ASSERT_TRUE(env.ref.moe_experts(x, ids, weights, gate_up, down, want, ws_ref, env.ref_stream).ok());
      const Tensor ws = env.empty(DType::kU8, {static_cast<int64_t>(env.ops().moe_workspace_bytes(c.n, c.k, c.d, c.inter))});
      const Tensor got = env.empty(ad, {c.n, c.d});
      ASSERT_TRUE(env.ops()
                      .moe_experts(env.up(x), env.up(ids), env.up(weights), env.up(gate_up), env.up(down), got, ws,
                                   env.stream())
                      .ok());
      expect_close(env.down(got), want, ad == DType::kBF16 ? kBf16Tol : 1e-9,
                   std::string("moe_experts x ") + dtype_name(ad) + " n=" + std::to_string(c.n) + " E=" +
                       std::to_string(c.n_expert) + " k=" + std::to_string(c.k) + " d=" + std::to_string(c.d) +
                       " inter=" + std::to_string(c.inter) + " " + dtype_name(c.wd));
    }
}

}  // namespace
}  // namespace ft::test
