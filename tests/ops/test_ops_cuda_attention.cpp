// cuda kv_store, paged attention, moe_route and moe_experts against the ref ops, f32 and bf16 activations;
// skipped without a GPU. Attention: several sequences with different kv lengths (decode rows and prefill
// chunks mixed), shuffled page tables, page sizes 1 and 16, GQA ratios 1 to 8, sliding windows, sinks, hd_k
// != hd_v, values that are the keys' leading dims (the latent cache: 576-wide keys, 512-wide values, 16 and 32 heads,
// bf16 decode rows on the tensor-core decode kernel, f32 ones on the CUDA-core latent kernel; 72-wide keys of 20 heads
// there too, a partial second group of 16), the split-KV decode path (one row
// per sequence; on sm_90 up to 16 ranges merge in a thread-block cluster, more in the combine kernel), the single-split
// prefill path and the tensor-core prefill path (bf16 q and cache; head dims 64, 128 and 256, each with and without a
// window and sinks; prompts of several 64-row query tiles and key tiles, after a cached prefix, with a partial last
// tile). Tolerances (NMSE): kv_store is an exact copy (0); f32 attention rounds q.k and the online softmax in fp32:
// 1e-10; f32 experts are two fp32 GEMMs: 1e-9; router ids exact and weights 1e-12; bf16 outputs kBf16Tol.
#include <string>
#include <vector>

#include "attention_cases.h"
#include "backend/cuda/attention_decode.cuh"
#include "moe_cases.h"
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

// Keys only (v and v_cache undefined), as the latent cache stores them: the keys as with values, nothing else written.
TEST(OpsCuda, KvStoreKeysOnly) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  for (DType ad : {DType::kF32, DType::kBF16})
    for (DType cd : {DType::kF32, DType::kBF16}) {
      const int64_t n = 33, hd = 576, page_size = 16, n_pages = 5;
      Tensor k = make_tensor(ad, {n, 1, hd}), slots = make_tensor(DType::kI32, {n});
      fill_normal(k, 82);
      for (int64_t i = 0; i < n; ++i) set_value(slots, i, static_cast<double>((i * 37 + 5) % (n_pages * page_size)));
      Tensor kw = make_tensor(cd, {n_pages, page_size, 1, hd});
      fill_normal(kw, 83);
      const Tensor kg = env.up(kw);
      ASSERT_TRUE(env.ref.kv_store(k, Tensor{}, slots, kw, Tensor{}, env.ref_stream).ok());
      ASSERT_TRUE(env.ops().kv_store(env.up(k), Tensor{}, env.up(slots), kg, Tensor{}, env.stream()).ok());
      expect_close(env.down(kg), kw, 0, std::string("kv_store keys only ") + dtype_name(ad) + " -> " + dtype_name(cd));
      EXPECT_FALSE(env.ops().kv_store(env.up(k), Tensor{}, env.up(slots), kg, kg, env.stream()).ok())
          << "a v_cache without v";
    }
}

// seqs: {queries this step, kv length after it}; extra_pages: as make_attention_problem's.
void run_attention(CudaEnv& env, const AttnCase& c, DType ad, const std::vector<std::pair<int64_t, int64_t>>& seqs,
                   const std::string& label, int64_t extra_pages = 3) {
  const AttnProblem a = make_attention_problem(env.ref, env.ref_stream, c, ad, seqs, extra_pages);
  PagedAttentionMeta dmeta = a.meta;
  dmeta.q_start = env.up(a.meta.q_start), dmeta.kv_len = env.up(a.meta.kv_len);
  dmeta.page_table = env.up(a.meta.page_table);
  AttentionParams dp = a.params;
  if (c.sinks) dp.sinks = env.up(a.params.sinks);
  const Tensor got = env.empty(ad, {a.n, c.n_head, a.hd_v});
  const Tensor k_dev = env.up(a.k_cache);
  const Tensor v_dev = c.values_in_keys ? k_dev.slice(3, 0, a.hd_v) : env.up(a.v_cache);
  ASSERT_TRUE(env.ops().attention(env.up(a.q), k_dev, v_dev, dmeta, got, dp, env.stream()).ok());
  expect_close(env.down(got), a.want, ad == DType::kBF16 ? kBf16Tol : 1e-10, label + " " + a.label);
}

TEST(OpsCuda, Attention) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  const AttnCase cases[] = {
      {1, 1, 64, 16, 0, false, DType::kF32},
      {2, 1, 64, 1, 0, false, DType::kF32},
      {8, 2, 128, 16, 0, false, DType::kBF16},
      {8, 1, 80, 16, 0, false, DType::kF32},
      {16, 2, 64, 16, 7, false, DType::kF32},
      {4, 2, 64, 1, 7, true, DType::kBF16},
      {8, 1, 64, 16, 0, true, DType::kF32},
      {6, 2, 128, 16, 20, true, DType::kF32},
      {32, 4, 128, 16, 0, false, DType::kBF16},
      {8, 2, 128, 16, 100, true, DType::kBF16},
      {8, 2, 64, 16, 0, false, DType::kBF16},
      {8, 2, 256, 16, 0, false, DType::kBF16},
      {4, 1, 256, 16, 100, true, DType::kBF16},
      {4, 1, 72, 16, 0, false, DType::kF32, true},
      {16, 1, 576, 16, 0, false, DType::kBF16, true},
      {20, 1, 72, 1, 0, false, DType::kBF16, true},
      {16, 1, 576, 16, 100, false, DType::kBF16, true},
      {32, 1, 576, 1, 0, false, DType::kBF16, true},
  };
  for (DType ad : {DType::kF32, DType::kBF16})
    for (const AttnCase& c : cases) {
      run_attention(env, c, ad, {{1, 1}, {1, 40}, {17, 17}, {5, 70}, {33, 45}}, "mixed");
      run_attention(env, c, ad, {{1, 300}, {1, 1}, {1, 777}}, "decode");
      run_attention(env, c, ad, {{1, 100}, {1, 1}, {1, 200}}, "decode, few ranges");
      // Room for 40960 keys of page size 16 (the most splits): each row uses the ranges its keys fill.
      run_attention(env, c, ad, {{1, 300}, {1, 1}, {1, 5000}}, "decode, wide page table", 40960 / c.page_size);
      // Several 64-row tiles per sequence, after a cached prefix and from scratch (the bf16 tensor-core path).
      run_attention(env, c, ad, {{200, 260}, {70, 70}, {1, 5}}, "long prefill");
    }
}

// The tensor-core latent kernel's 168 KB blocks: only devices that let a block opt in to that much take it (H200:
// 227 KB); A100's 163 KB and the consumer parts' 99 KB leave their latent steps to the kernels that fit. Host-side.
TEST(OpsCuda, LatentTileDecodeNeedsItsSharedMemory) {
  EXPECT_TRUE(cuda::latent_tile_decode_supported(576, 512, 16, 227 * 1024));
  EXPECT_TRUE(cuda::latent_tile_decode_supported(576, 512, 128, 227 * 1024));
  EXPECT_FALSE(cuda::latent_tile_decode_supported(576, 512, 16, 163 * 1024));
  EXPECT_FALSE(cuda::latent_tile_decode_supported(576, 512, 16, 99 * 1024));
  EXPECT_FALSE(cuda::latent_tile_decode_supported(576, 512, 20, 227 * 1024));  // heads in whole groups of 16
  EXPECT_FALSE(cuda::latent_tile_decode_supported(72, 64, 16, 227 * 1024));
}

TEST(OpsCuda, MoeRoute) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  for (const RouteCase& c : kRouteCases)
    for (int64_t n : {1, 7, 33})
      for (bool tied : {false, true}) {
        const RouteProblem r = make_route_problem(env.ref, env.ref_stream, c, n, tied);
        const Tensor ids_got = env.empty(DType::kI32, {n, c.k}), w_got = env.empty(DType::kF32, {n, c.k});
        ASSERT_TRUE(
            env.ops()
                .moe_route(env.up(r.logits), c.bias ? env.up(r.bias) : Tensor{}, ids_got, w_got, r.params, env.stream())
                .ok());
        expect_equal_ints(env.down(ids_got), r.ids_want, r.label + " ids");
        expect_close(env.down(w_got), r.w_want, 1e-12, r.label + " weights");
      }
}

TEST(OpsCuda, MoeExperts) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  // n <= 8: the fused decode GEMVs (more experts per token than the down kernel's warps, and past its 32, too; one
  // token with bf16 weights takes the kernels that read their weights once, Qwen3-30B-A3B's layer among them);
  // larger n: the grouped GEMM (tensor cores in bf16 past 32 tokens). d, inter multiples of 8 take 16-byte loads.
  const ExpertCase cases[] = {
      {1, 8, 1, 64, 32, DType::kF32},
      {1, 8, 2, 17, 33, DType::kBF16},
      {3, 128, 8, 256, 96, DType::kBF16},
      {7, 8, 2, 64, 48, DType::kBF16},
      {33, 8, 2, 64, 48, DType::kF32},
      {33, 128, 8, 64, 32, DType::kBF16},
      {33, 8, 8, 100, 40, DType::kBF16},
      {70, 16, 4, 96, 72, DType::kBF16},
      {2, 128, 8, 2048, 768, DType::kBF16},
      {9, 8, 2, 17, 33, DType::kF32},
      {2, 32, 10, 64, 40, DType::kBF16},
      {1, 64, 36, 32, 16, DType::kBF16},
      {1, 16, 8, 2048, 768, DType::kBF16},
      {1, 8, 2, 64, 32, DType::kBF16},
      {1, 8, 3, 40, 24, DType::kBF16},
      {1, 40, 32, 64, 16, DType::kBF16},
      // gpt-oss's experts (biases, clamped SwiGLU) on every path: one token, several, the SIMT and tensor-core GEMMs,
      // and gpt-oss-20b's width (2880, not a multiple of 256).
      {1, 8, 2, 64, 32, DType::kBF16, true},
      {5, 32, 4, 64, 48, DType::kBF16, true},
      {9, 16, 4, 72, 40, DType::kF32, true},
      {40, 32, 4, 64, 48, DType::kBF16, true},
      {2, 16, 4, 2880, 256, DType::kBF16, true},
      // Down's row groups with a last block only partly inside d (k = 1: 32 rows a block; k = 2: 16).
      {1, 8, 1, 40, 32, DType::kBF16, true},
      {2, 8, 2, 40, 32, DType::kBF16},
  };
  for (DType ad : {DType::kF32, DType::kBF16})
    for (const ExpertCase& c : cases) {
      const ExpertProblem e = make_expert_problem(env.ref, env.ref_stream, c, ad);
      const Tensor ws = env.empty(DType::kU8, {static_cast<int64_t>(env.ops().moe_workspace_bytes(c.n, c.k, c.d, c.inter))});
      const Tensor got = env.empty(ad, {c.n, c.d});
      MoeExpertParams params = e.params;
      if (c.gpt_oss) params.gate_up_bias = env.up(e.params.gate_up_bias), params.down_bias = env.up(e.params.down_bias);
      ASSERT_TRUE(env.ops()
                      .moe_experts(env.up(e.x), env.up(e.ids), env.up(e.weights), env.up(e.gate_up), env.up(e.down),
                                   got, ws, params, env.stream())
                      .ok());
      expect_close(env.down(got), e.want, ad == DType::kBF16 ? kBf16Tol : 1e-9, e.label);
    }
}

}  // namespace
}  // namespace ft::test
