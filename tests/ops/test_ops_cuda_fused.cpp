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
// matmul's (f32 1e-9; bf16 out or h: kBf16Tol). x, delta and out are column slices of wider rows. Batches of 1..4 rows
// with bf16 weights take the fused GEMV (a block per 8 weight rows, each forming the normed rows; 130 rows: a last
// block with idle warps; 5000: many blocks reading x while block 0 writes x_out and h), with and without delta, f32
// and bf16 norm weights, zero-centred or not; the rest add, rms_norm and matmul (5 and 33 rows, f32 weights, a bias,
// d = 20, f32 rows of 4096 past the shared memory at 3 and 4 rows).
TEST(OpsCuda, AddRmsNormMatmul) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  const int64_t shapes[][2] = {{20, 9}, {128, 24}, {2048, 130}, {2048, 5000}, {4096, 64}};
  for (DType ad : {DType::kF32, DType::kBF16})
    for (DType pd : {DType::kBF16, DType::kF32})
      for (const auto& dm : shapes)
        for (int64_t n : {1, 2, 3, 4, 5, 33})
          for (int variant = 0; variant < 4; ++variant) {
            // 0: delta, f32 norm weight; 1: no delta; 2: delta, zero-centred; 3: delta, a bias
            const int64_t d = dm[0], m = dm[1];
            if (n * m * d > 42'000'000 || (pd == DType::kF32 && m > 1000)) continue;
            const bool with_delta = variant != 1, zc = variant == 2, with_bias = variant == 3;
            const DType wd = variant == 0 ? DType::kF32 : DType::kBF16;
            Tensor xbuf = make_tensor(ad, {n, d + 8}), dbuf = make_tensor(ad, {n, d + 8}), w = make_tensor(wd, {d});
            Tensor proj = make_tensor(pd, {m, d}), bias = make_tensor(pd, {m});
            fill_normal(xbuf, 120 + n, 3.0), fill_normal(dbuf, 121 + d), fill_normal(w, 122, zc ? 0.1 : 1.0);
            fill_normal(proj, 123 + m), fill_normal(bias, 124);
            const Tensor x = xbuf.slice(1, 8, d), delta = dbuf.slice(1, 8, d);
            const RmsNormParams p{1e-6f, zc};
            Tensor want_x = make_tensor(ad, {n, d}), want_h = make_tensor(ad, {n, d});
            Tensor want = make_tensor(DType::kF64, {n, m});
            ASSERT_TRUE(env.ref.add_rms_norm_matmul(x, with_delta ? delta : Tensor{}, w,
                                                    with_delta ? want_x : Tensor{}, want_h, proj,
                                                    with_bias ? bias : Tensor{}, want, p, env.ref_stream)
                            .ok());
            const Tensor x_dev = env.up(xbuf).slice(1, 8, d), delta_dev = env.up(dbuf).slice(1, 8, d);
            const Tensor w_dev = env.up(w), proj_dev = env.up(proj), bias_dev = env.up(bias);
            for (DType od : {DType::kF32, DType::kBF16}) {
              const std::string what = std::string("add_rms_norm_matmul x ") + dt(ad) + " proj " + dt(pd) + " out " +
                                        dt(od) + " d=" + std::to_string(d) + " m=" + std::to_string(m) +
                                        " n=" + std::to_string(n) + " variant " + std::to_string(variant);
              const Tensor got_x = env.empty(ad, {n, d}), got_h = env.empty(ad, {n, d});
              const Tensor got_buf = env.empty(od, {n, m + 3});
              ASSERT_TRUE(env.ops()
                              .add_rms_norm_matmul(x_dev, with_delta ? delta_dev : Tensor{}, w_dev,
                                                   with_delta ? got_x : Tensor{}, got_h, proj_dev,
                                                   with_bias ? bias_dev : Tensor{}, got_buf.slice(1, 0, m), p,
                                                   env.stream())
                              .ok())
                  << what;
              if (with_delta) expect_close(env.down(got_x), want_x, tol_for(ad, 0), what + " x_out");
              expect_close(env.down(got_h), want_h, tol_for(ad, 1e-12), what + " h");
              // bf16 rows of h differ from ref's by a rounding here and there, and so the products that read them.
              expect_close(env.down(got_buf).slice(1, 0, m), want, ad == DType::kBF16 ? kBf16Tol : tol_for(od, 1e-9),
                           what);
            }
          }
}

// Two layers' worth of the op as the model runs it: the second reads the residual the first wrote (block 0, just
// before: the programmatic wait must hold it back) and writes h again, against ref doing the same.
TEST(OpsCuda, AddRmsNormMatmulChained) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  const int64_t n = 1, d = 2048, m = 640;
  for (DType ad : {DType::kF32, DType::kBF16}) {
    Tensor a = make_tensor(ad, {n, d}), d1 = make_tensor(ad, {n, d}), d2 = make_tensor(ad, {n, d});
    Tensor w = make_tensor(DType::kBF16, {d}), proj1 = make_tensor(DType::kBF16, {m, d});
    Tensor proj2 = make_tensor(DType::kBF16, {m, d});
    fill_normal(a, 130, 3.0), fill_normal(d1, 131), fill_normal(d2, 132), fill_normal(w, 133);
    fill_normal(proj1, 134), fill_normal(proj2, 135);
    const RmsNormParams p{1e-6f, false};
    Tensor b = make_tensor(ad, {n, d}), a2 = make_tensor(ad, {n, d}), h = make_tensor(ad, {n, d});
    Tensor out1 = make_tensor(DType::kF64, {n, m}), out2 = make_tensor(DType::kF64, {n, m});
    ASSERT_TRUE(env.ref.add_rms_norm_matmul(a, d1, w, b, h, proj1, Tensor{}, out1, p, env.ref_stream).ok());
    ASSERT_TRUE(env.ref.add_rms_norm_matmul(b, d2, w, a2, h, proj2, Tensor{}, out2, p, env.ref_stream).ok());
    const Tensor a_dev = env.up(a), b_dev = env.empty(ad, {n, d}), h_dev = env.empty(ad, {n, d});
    const Tensor d1_dev = env.up(d1), d2_dev = env.up(d2), w_dev = env.up(w);
    const Tensor o1_dev = env.empty(ad, {n, m}), o2_dev = env.empty(ad, {n, m});
    ASSERT_TRUE(env.ops()
                    .add_rms_norm_matmul(a_dev, d1_dev, w_dev, b_dev, h_dev, env.up(proj1), Tensor{}, o1_dev, p,
                                         env.stream())
                    .ok());
    ASSERT_TRUE(env.ops()
                    .add_rms_norm_matmul(b_dev, d2_dev, w_dev, a_dev, h_dev, env.up(proj2), Tensor{}, o2_dev, p,
                                         env.stream())
                    .ok());
    const std::string what = std::string("add_rms_norm_matmul twice, x ") + dt(ad);
    expect_close(env.down(a_dev), a2, tol_for(ad, 0), what + " residual");
    expect_close(env.down(h_dev), h, tol_for(ad, 1e-12), what + " h");
    expect_close(env.down(o1_dev), out1, tol_for(ad, 1e-9), what + " first out");
    expect_close(env.down(o2_dev), out2, tol_for(ad, 1e-9), what + " second out");
  }
}

TEST(OpsCuda, AddRmsNormMatmulRejectsOverlappingOutputs) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  const Tensor x = env.empty(DType::kBF16, {2, 64}), delta = env.empty(DType::kBF16, {2, 64});
  const Tensor w = env.empty(DType::kBF16, {64}), proj = env.empty(DType::kBF16, {8, 64});
  const Tensor x_out = env.empty(DType::kBF16, {2, 64}), h = env.empty(DType::kBF16, {2, 64});
  const Tensor out = env.empty(DType::kBF16, {2, 8}), wide = env.empty(DType::kBF16, {3, 64});
  const RmsNormParams p;
  const auto run = [&](const Tensor& xo, const Tensor& hh, const Tensor& o) {
    return env.ops().add_rms_norm_matmul(x, delta, w, xo, hh, proj, Tensor{}, o, p, env.stream()).ok();
  };
  EXPECT_TRUE(run(x_out, h, out));
  EXPECT_FALSE(run(x, h, out));                                 // x_out is x
  EXPECT_FALSE(run(x_out, delta, out));                         // h is delta
  EXPECT_FALSE(run(x_out, x_out, out));                         // x_out is h
  EXPECT_FALSE(run(x_out, h, x.slice(1, 0, 8)));                // out inside x
  EXPECT_FALSE(run(wide.slice(0, 1, 2), wide.slice(0, 0, 2), out));  // x_out and h share a row
  EXPECT_FALSE(env.ops().add_rms_norm_matmul(x, delta, w, Tensor{}, h, proj, Tensor{}, out, p, env.stream()).ok());
  EXPECT_FALSE(env.ops()
                   .add_rms_norm_matmul(x, Tensor{}, w.reshape({1, 64}), Tensor{}, h, proj, Tensor{}, out, p,
                                        env.stream())
                   .ok());  // a norm weight of two dims
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
