// cuda fused ops (add_rms_norm_matmul, qk_norm_rope_store) against the ref ops, with f32 and bf16 activations;
// skipped without a GPU. qk_norm_rope_store also against the cuda ops it fuses: bit for bit the same (0), the same
// sums in the same order, the same roundings. Against ref (float64 math, the same roundings to the activation dtype
// between the fused steps): f32 row ops 1e-12, bf16 outputs kBf16Tol (3e-5); values go to the cache unchanged (0),
// keys as the rows they are copied from (a bf16 cache: kBf16Tol).
#include <string>

#include "norm_rope_cases.h"
#include "test_ops_cuda_env.h"

namespace ft::test {
namespace {

const char* dt(DType t) { return dtype_name(t); }
// Device copies of every tensor of a problem (the views over the copied rows).
QkTensors device_copies(const CudaEnv& env, const QkProblem& p) {
  return {env.up(p.rows),
          env.up(p.k_cache),
          env.up(p.v_cache),
          env.up(p.q_w),
          env.up(p.k_w),
          env.up(p.positions),
          env.up(p.inv_freq),
          env.up(p.slots),
          p.q,
          p.k,
          p.v};
}
double tol_for(DType out, double f32_tol) { return out == DType::kBF16 ? kBf16Tol : f32_tol; }

// add_rms_norm_matmul against ref with h and x_out in the activation dtype (so ref's matmul reads the rows rounded as
// the op's): x_out one add, exact in f32 (0), in bf16 an fp32 sum rounded again (kBf16Tol); h a row op's; out as
// matmul's (f32 1e-9; bf16 out or h: kBf16Tol). Batches of 1..4 rows with bf16 weights take the fused GEMV (a block per
// 8 weight rows, each forming the normed rows; 130 rows: a last block with idle warps; 5000: many blocks reading x
// while block 0 writes x_out and h), the rest add, rms_norm and matmul (5 and 33 rows, f32 weights, a bias, d = 20,
// f32 rows of 4096 past the shared memory at 3 and 4 rows).
TEST(OpsCuda, AddRmsNormMatmul) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  const int64_t shapes[][2] = {{20, 9}, {128, 24}, {2048, 130}, {2048, 5000}, {4096, 64}};
  for (DType ad : {DType::kF32, DType::kBF16})
    for (DType pd : {DType::kBF16, DType::kF32})
      for (const auto& dm : shapes)
        for (int64_t n : {1, 2, 3, 4, 5, 33})
          for (int variant = 0; variant < 3; ++variant) {  // 0: delta, 1: no delta, 2: delta, zero-centred, bias
            const int64_t d = dm[0], m = dm[1];
            if (n * m * d > 40'000'000 || (pd == DType::kF32 && m > 1000)) continue;
            const bool with_delta = variant != 1, zc = variant == 2, with_bias = variant == 2;
            const DType wd = variant == 0 ? DType::kF32 : DType::kBF16;
            Tensor x = make_tensor(ad, {n, d}), delta = make_tensor(ad, {n, d}), w = make_tensor(wd, {d});
            Tensor proj = make_tensor(pd, {m, d}), bias = make_tensor(pd, {m});
            fill_normal(x, 120 + n, 3.0), fill_normal(delta, 121 + d), fill_normal(w, 122, zc ? 0.1 : 1.0);
            fill_normal(proj, 123 + m), fill_normal(bias, 124);
            const RmsNormParams p{1e-6f, zc};
            Tensor want_x = make_tensor(ad, {n, d}), want_h = make_tensor(ad, {n, d});
            Tensor want = make_tensor(DType::kF64, {n, m});
            ASSERT_TRUE(env.ref.add_rms_norm_matmul(x, with_delta ? delta : Tensor{}, w,
                                                    with_delta ? want_x : Tensor{}, want_h, proj,
                                                    with_bias ? bias : Tensor{}, want, p, env.ref_stream)
                            .ok());
            const Tensor x_dev = env.up(x), delta_dev = env.up(delta), w_dev = env.up(w), proj_dev = env.up(proj);
            const Tensor bias_dev = env.up(bias);
            for (DType od : {DType::kF32, ad}) {
              const std::string what = std::string("add_rms_norm_matmul x ") + dt(ad) + " proj " + dt(pd) + " out " +
                                        dt(od) + " d=" + std::to_string(d) + " m=" + std::to_string(m) +
                                        " n=" + std::to_string(n) + " variant " + std::to_string(variant);
              const Tensor got_x = env.empty(ad, {n, d}), got_h = env.empty(ad, {n, d}), got = env.empty(od, {n, m});
              ASSERT_TRUE(env.ops()
                              .add_rms_norm_matmul(x_dev, with_delta ? delta_dev : Tensor{}, w_dev,
                                                   with_delta ? got_x : Tensor{}, got_h, proj_dev,
                                                   with_bias ? bias_dev : Tensor{}, got, p, env.stream())
                              .ok())
                  << what;
              if (with_delta) expect_close(env.down(got_x), want_x, tol_for(ad, 0), what + " x_out");
              expect_close(env.down(got_h), want_h, tol_for(ad, 1e-12), what + " h");
              // bf16 rows of h differ from ref's by a rounding here and there, and so the products that read them.
              expect_close(env.down(got), want, ad == DType::kBF16 ? kBf16Tol : tol_for(od, 1e-9), what);
            }
          }
}

TEST(OpsCuda, AddRmsNormMatmulRejectsAliasedOutputs) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  const Tensor x = env.empty(DType::kBF16, {1, 64}), delta = env.empty(DType::kBF16, {1, 64});
  const Tensor w = env.empty(DType::kBF16, {64}), proj = env.empty(DType::kBF16, {8, 64});
  const Tensor h = env.empty(DType::kBF16, {1, 64}), out = env.empty(DType::kBF16, {1, 8});
  const RmsNormParams p;
  EXPECT_FALSE(env.ops().add_rms_norm_matmul(x, delta, w, x, h, proj, Tensor{}, out, p, env.stream()).ok());
  EXPECT_FALSE(env.ops().add_rms_norm_matmul(x, delta, w, h, delta, proj, Tensor{}, out, p, env.stream()).ok());
  EXPECT_FALSE(env.ops().add_rms_norm_matmul(x, delta, w, Tensor{}, h, proj, Tensor{}, out, p, env.stream()).ok());
  EXPECT_FALSE(env.ops().add_rms_norm_matmul(x, delta, w, h, out, proj, Tensor{}, out, p, env.stream()).ok());
}

TEST(OpsCuda, QkNormRopeStore) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  for (const QkCase& c : kQkCases)
    for (DType ad : {DType::kF32, DType::kBF16})
      for (DType wd : {DType::kF32, DType::kBF16})
        for (DType cd : {DType::kF32, DType::kBF16})
          for (int64_t n : {1, 7, 33}) {
            const QkProblem p = make_qk_problem(c, ad, wd, cd, n);
            const std::string what = "qk_norm_rope_store " + p.label;
            // Ref in place on copies: each norm's output rounded to the activation dtype before the rotation.
            const QkTensors want = host_copies(p), got = device_copies(env, p), unfused = device_copies(env, p);
            ASSERT_TRUE(run_qk_fused(env.ref, env.ref_stream, p, want).ok());
            ASSERT_TRUE(run_qk_fused(env.ops(), env.stream(), p, got).ok());
            const Tensor got_rows = env.down(got.rows), got_k = env.down(got.k_cache), got_v = env.down(got.v_cache);
            expect_close(got_rows, want.rows, tol_for(ad, 1e-12), what);
            expect_close(got_k, want.k_cache, cd == DType::kBF16 ? kBf16Tol : tol_for(ad, 1e-12), what + " k cache");
            expect_close(got_v, want.v_cache, 0, what + " v cache");
            ASSERT_TRUE(run_qk_unfused(env.ops(), env.stream(), p, unfused).ok());
            expect_close(got_rows, env.down(unfused.rows), 0, what + " vs rms_norm + rope + kv_store");
            expect_close(got_k, env.down(unfused.k_cache), 0, what + " k cache vs kv_store");
            expect_close(got_v, env.down(unfused.v_cache), 0, what + " v cache vs kv_store");
          }
}

}  // namespace
}  // namespace ft::test
