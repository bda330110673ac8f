// cuda fused ops (add_rms_norm, qk_norm_rope_store) against the ref ops and against the cuda ops they fuse, with
// f32 and bf16 activations; skipped without a GPU. Against the unfused cuda ops the results are bit for bit the same
// (0): the same sums in the same order, the same roundings. Against ref (float64 math, the same roundings to the
// activation dtype between the fused steps): f32 row ops 1e-12, bf16 outputs kBf16Tol (3e-5); the updated x of
// add_rms_norm is one add, exact in f32 (0), in bf16 an fp32 sum rounded again to bf16 (kBf16Tol); values go to the
// cache unchanged (0), keys as the rows they are copied from (a bf16 cache: kBf16Tol).
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

TEST(OpsCuda, AddRmsNorm) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  for (DType ad : {DType::kF32, DType::kBF16})
    for (DType wd : {DType::kF32, DType::kBF16})
      for (int64_t d : {17, 128, 2048, 2049, 9000})  // 9000: longer than the registers hold (1024 threads * 8)
        for (bool zc : {false, true})
          for (int64_t n : {1, 3, 33}) {
            Tensor x = make_tensor(ad, {n, d}), delta = make_tensor(ad, {n, d}), w = make_tensor(wd, {d});
            fill_normal(x, 100 + d, 3.0), fill_normal(delta, 101 + n), fill_normal(w, 102, zc ? 0.1 : 1.0);
            const RmsNormParams p{1e-6f, zc};
            Tensor want_x = copy_of(x), want = make_tensor(DType::kF64, {n, d});
            ASSERT_TRUE(env.ref.add_rms_norm(want_x, delta, w, want, p, env.ref_stream).ok());
            const std::string what = std::string("add_rms_norm x ") + dt(ad) + " w " + dt(wd) +
                                     " d=" + std::to_string(d) + " n=" + std::to_string(n) +
                                     (zc ? " zero-centred" : "");
            const Tensor x_dev = env.up(x), delta_dev = env.up(delta), w_dev = env.up(w), got = env.empty(ad, {n, d});
            ASSERT_TRUE(env.ops().add_rms_norm(x_dev, delta_dev, w_dev, got, p, env.stream()).ok());
            const Tensor got_x = env.down(x_dev), got_out = env.down(got);
            expect_close(got_x, want_x, tol_for(ad, 0), what + " x");
            expect_close(got_out, want, tol_for(ad, 1e-12), what);
            const Tensor ux = env.up(x), uout = env.empty(ad, {n, d});
            ASSERT_TRUE(env.ops().add(ux, delta_dev, ux, env.stream()).ok());
            ASSERT_TRUE(env.ops().rms_norm(ux, w_dev, uout, p, env.stream()).ok());
            expect_close(got_x, env.down(ux), 0, what + " x vs add");
            expect_close(got_out, env.down(uout), 0, what + " vs add + rms_norm");
          }
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
