// cpu fused ops (add_rms_norm_matmul, qk_norm_rope_store) against the ref ops, and qk_norm_rope_store against the cpu
// ops it fuses: bit for bit the same (0). Against ref (float64 sums, the same roundings to f32 between the fused
// steps): the row ops' 1e-12; values go to the cache unchanged (0), keys into an f32 cache 1e-12, into a bf16 cache
// one rounding of values ref holds a few f32 ulps apart: kBf16Tol.
#include <gtest/gtest.h>

#include <string>

#include "norm_rope_cases.h"

namespace ft::test {
namespace {

constexpr double kBf16Tol = 3e-5;  // a bf16 rounding, (2^-8)^2 on a single element and far less on average

// add_rms_norm_matmul, with and without the residual update: the cpu op runs add, rms_norm and matmul in turn, so
// against ref x_out is exact (0), h the row ops' 1e-12 and out an f32 GEMM's (k products in fp32: 1e-9).
TEST(OpsCpu, AddRmsNormMatmul) {
  OpEnv env;
  for (DType pd : {DType::kF32, DType::kBF16})
    for (bool with_delta : {true, false})
      for (int64_t n : {1, 3, 33}) {
        const int64_t d = 2048, m = 40;
        Tensor x = make_tensor(DType::kF32, {n, d}), delta = make_tensor(DType::kF32, {n, d});
        Tensor w = make_tensor(DType::kBF16, {d}), proj = make_tensor(pd, {m, d});
        fill_normal(x, 110 + n, 3.0), fill_normal(delta, 111), fill_normal(w, 112), fill_normal(proj, 113);
        const RmsNormParams p{1e-6f, true};
        const Tensor dl = with_delta ? delta : Tensor{};
        const auto run = [&](const OpTable& ops, Stream& s, const Tensor& x_out, const Tensor& h, const Tensor& out) {
          return ops.add_rms_norm_matmul(x, dl, w, x_out, h, proj, Tensor{}, out, p, s);
        };
        Tensor want_x = make_tensor(DType::kF32, {n, d}), want_h = make_tensor(DType::kF32, {n, d});
        Tensor want = make_tensor(DType::kF64, {n, m});
        ASSERT_TRUE(run(env.ref, env.ref_stream, with_delta ? want_x : Tensor{}, want_h, want).ok());
        for_each_isa([&](const std::string& isa) {
          const std::string what = std::string("add_rms_norm_matmul proj ") + dtype_name(pd) +
                                   (with_delta ? " delta" : "") + " n=" + std::to_string(n) + isa;
          Tensor got_x = make_tensor(DType::kF32, {n, d}), got_h = make_tensor(DType::kF32, {n, d});
          Tensor got = make_tensor(DType::kF32, {n, m});
          ASSERT_TRUE(run(env.cpu, env.cpu_stream, with_delta ? got_x : Tensor{}, got_h, got).ok());
          if (with_delta) expect_close(got_x, want_x, 0, what + " x_out");
          expect_close(got_h, want_h, 1e-12, what + " h");
          expect_close(got, want, 1e-9, what);
        });
      }
}

TEST(OpsCpu, QkNormRopeStore) {
  OpEnv env;
  for (const QkCase& c : kQkCases)
    for (DType wd : {DType::kF32, DType::kBF16})
      for (DType cd : {DType::kF32, DType::kBF16})
        for (int64_t n : {1, 5, 33}) {
          const QkProblem p = make_qk_problem(c, DType::kF32, wd, cd, n);
          // Ref in place on copies: each norm's output rounded to f32 before the rotation, as the op's contract.
          const QkTensors want = host_copies(p);
          ASSERT_TRUE(run_qk_fused(env.ref, env.ref_stream, p, want).ok());
          for_each_isa([&](const std::string& isa) {
            const std::string what = "qk_norm_rope_store " + p.label + isa;
            const QkTensors got = host_copies(p), unfused = host_copies(p);
            ASSERT_TRUE(run_qk_fused(env.cpu, env.cpu_stream, p, got).ok());
            expect_close(got.rows, want.rows, 1e-12, what);
            expect_close(got.k_cache, want.k_cache, cd == DType::kBF16 ? kBf16Tol : 1e-12, what + " k cache");
            expect_close(got.v_cache, want.v_cache, 0, what + " v cache");
            ASSERT_TRUE(run_qk_unfused(env.cpu, env.cpu_stream, p, unfused).ok());
            expect_close(got.rows, unfused.rows, 0, what + " vs rms_norm + rope + kv_store");
            expect_close(got.k_cache, unfused.k_cache, 0, what + " k cache vs kv_store");
            expect_close(got.v_cache, unfused.v_cache, 0, what + " v cache vs kv_store");
            if (!p.q_w.defined()) return;
            QkTensors one_norm = host_copies(p);
            one_norm.k_w = Tensor{};
            EXPECT_FALSE(run_qk_fused(env.cpu, env.cpu_stream, p, one_norm).ok()) << what << ": q_w without k_w";
          });
        }
}

}  // namespace
}  // namespace ft::test
