// cuda dense ops (embedding, matmul in its GEMV / cuBLASLt / tensor-core / CUDA-core paths, matmul_heads, rms_norm,
// rope, swiglu, softmax, add, convert) against the ref ops, with f32 and bf16 activations; skipped without a GPU. Ref
// writes f64 outputs from the same f32/bf16 inputs. Tolerances (NMSE): gathers and conversions are exact (0); f32
// matmul accumulates k products in fp32, error ~ eps^2 * k: 1e-9; f32 row ops (norm, rope, swiglu, softmax, add) round
// a few times per element: 1e-12; bf16 outputs are at most two roundings of fp32 values: kBf16Tol (3e-5).
#include <cmath>
#include <string>

#include "test_ops_cuda_env.h"

namespace ft::test {
namespace {

const char* dt(DType t) { return dtype_name(t); }
double tol_for(DType out, double f32_tol) { return out == DType::kBF16 ? kBf16Tol : f32_tol; }

TEST(OpsCuda, Embedding) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  for (DType td : {DType::kF32, DType::kBF16})
    for (DType od : {DType::kF32, DType::kBF16})
      for (int64_t d : {1, 17, 64, 1000}) {
        Tensor table = make_tensor(td, {1000, d}), ids = make_tensor(DType::kI32, {33});
        fill_normal(table, 1);
        for (int64_t i = 0; i < 33; ++i) set_value(ids, i, static_cast<double>((i * 389 + 7) % 1000));
        Tensor want = make_tensor(od, {33, d});
        ASSERT_TRUE(env.ref.embedding(table, ids, want, env.ref_stream).ok());
        const Tensor got = env.empty(od, {33, d});
        ASSERT_TRUE(env.ops().embedding(env.up(table), env.up(ids), got, env.stream()).ok());
        expect_close(env.down(got), want, 0, std::string("embedding ") + dt(td) + " -> " + dt(od) + " d=" + std::to_string(d));
      }
}

TEST(OpsCuda, Matmul) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  // {m, k}: k % 8 == 0 takes the GEMV (n <= 4), cuBLASLt (bf16 x bf16) and tensor-core (f32 x bf16: partial row
  // and column tiles, 300 rows in three row tiles, k = 4104 ending in a partial k step) paths, odd k and f32 weights
  // the CUDA-core tile GEMM. The GEMV has a one-wave variant for matrices the device holds at once and another past
  // that (9000 rows), and loads a bf16 row wider than 2048 in one batch (4104; 2880, gpt-oss's width, in 12 chunks a
  // lane).
  const int64_t shapes[][2] = {{1, 1},     {17, 64},    {64, 17},   {1000, 33}, {37, 2049},
                               {130, 256}, {300, 2048}, {48, 4104}, {40, 2880}, {9000, 64}};
  for (DType xd : {DType::kF32, DType::kBF16})
    for (DType wd : {DType::kF32, DType::kBF16})
      for (const auto& mk : shapes)
        for (int64_t n : {1, 2, 3, 4, 5, 7, 33, 70, 300})
          for (bool with_bias : {false, true}) {
            const int64_t m = mk[0], k = mk[1];
            if (n * m * k > 20'000'000) continue;
            // x is a column slice of a wider buffer (8 extra columns keep 16-byte row alignment), so its rows
            // are strided.
            Tensor xbuf = make_tensor(xd, {n, k + 8}), w = make_tensor(wd, {m, k});
            Tensor bias = with_bias ? make_tensor(wd, {m}) : Tensor{};
            fill_normal(xbuf, 10 + n), fill_normal(w, 20 + m);
            if (with_bias) fill_normal(bias, 30);
            Tensor want = make_tensor(DType::kF64, {n, m});
            ASSERT_TRUE(env.ref.matmul(xbuf.slice(1, 8, k), w, bias, want, env.ref_stream).ok());
            const Tensor x_dev = env.up(xbuf).slice(1, 8, k), w_dev = env.up(w);
            const Tensor b_dev = with_bias ? env.up(bias) : Tensor{};
            for (DType od : {DType::kF32, DType::kBF16}) {
              const Tensor got = env.empty(od, {n, m});
              ASSERT_TRUE(env.ops().matmul(x_dev, w_dev, b_dev, got, env.stream()).ok());
              expect_close(env.down(got), want, tol_for(od, 1e-9),
                           std::string("matmul x ") + dt(xd) + " w " + dt(wd) + " out " + dt(od) + " n=" +
                               std::to_string(n) + " m=" + std::to_string(m) + " k=" + std::to_string(k) +
                               (with_bias ? " bias" : ""));
            }
          }
}

// Per-head weights as OpsCpu.MatmulHeads has them: 1..4 rows take the one-launch kernel over every head, 5 and more
// matmul a head at a time; odd k (7) takes matmul's paths at any n.
TEST(OpsCuda, MatmulHeads) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  const int64_t shapes[][3] = {{3, 5, 7}, {4, 16, 8}, {16, 512, 128}, {16, 128, 512}};
  for (DType xd : {DType::kF32, DType::kBF16})
    for (DType wd : {DType::kF32, DType::kBF16})
      for (const auto& hmk : shapes)
        for (int64_t n : {1, 2, 4, 5, 33}) {
          const int64_t heads = hmk[0], m = hmk[1], k = hmk[2];
          // 8 extra columns of x and 2 extra rows a head of w keep 16-byte alignment.
          Tensor xbuf = make_tensor(xd, {n, heads, k + 8}), wbuf = make_tensor(wd, {heads, m + 2, k});
          fill_normal(xbuf, 40 + n), fill_normal(wbuf, 41 + m);
          Tensor want = make_tensor(DType::kF64, {n, heads, m});
          ASSERT_TRUE(env.ref.matmul_heads(xbuf.slice(2, 8, k), wbuf.slice(1, 2, m), want, env.ref_stream).ok());
          const Tensor x_dev = env.up(xbuf).slice(2, 8, k), w_dev = env.up(wbuf).slice(1, 2, m);
          for (DType od : {DType::kF32, DType::kBF16}) {
            const Tensor got = env.empty(od, {n, heads, m});
            ASSERT_TRUE(env.ops().matmul_heads(x_dev, w_dev, got, env.stream()).ok());
            expect_close(env.down(got), want, tol_for(od, 1e-9),
                         std::string("matmul_heads x ") + dt(xd) + " w " + dt(wd) + " out " + dt(od) +
                             " n=" + std::to_string(n) + " heads=" + std::to_string(heads) + " m=" + std::to_string(m) +
                             " k=" + std::to_string(k));
          }
        }
}

// f32 x bf16 on tensor cores keeps every bit of x: with one weight of 1 per row and zeros elsewhere, out[r, c] is
// x[r, pick(c)], which the three-part split gives (hi + mid + lo is x, each part times 1 and the zeros exact) up to
// the MMA's alignment of the parts to hi's exponent, which can drop x's last bit where hi rounded up to the next power
// of two (about 0.2% of values: NMSE ~1e-17). A two-part split loses x's last 8 significand bits (NMSE ~3e-11), past
// this test's 1e-14 against ref.
TEST(OpsCuda, MatmulF32ByBf16KeepsEveryBit) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  const int64_t shapes[][3] = {{37, 64, 64}, {130, 48, 4104}};  // {n, m, k}
  for (const auto& nmk : shapes) {
    const int64_t n = nmk[0], m = nmk[1], k = nmk[2];
    Tensor x = make_tensor(DType::kF32, {n, k}), w = make_tensor(DType::kBF16, {m, k});
    fill_normal(x, 50);
    for (int64_t c = 0; c < m; ++c) set_value(w, c * k + (c * 97) % k, 1.0);
    Tensor want = make_tensor(DType::kF64, {n, m});
    ASSERT_TRUE(env.ref.matmul(x, w, Tensor{}, want, env.ref_stream).ok());
    const Tensor got = env.empty(DType::kF32, {n, m});
    ASSERT_TRUE(env.ops().matmul(env.up(x), env.up(w), Tensor{}, got, env.stream()).ok());
    expect_close(env.down(got), want, 1e-14,
                 "matmul f32 x one-hot bf16 rows n=" + std::to_string(n) + " k=" + std::to_string(k));
  }
}

TEST(OpsCuda, RmsNorm) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  for (DType ad : {DType::kF32, DType::kBF16})
    for (DType wd : {DType::kF32, DType::kBF16})
      for (int64_t d : {1, 17, 64, 128, 1000, 2049})
        for (bool zc : {false, true})
          for (int64_t n : {1, 3, 7}) {
            Tensor x = make_tensor(ad, {n, d}), w = make_tensor(wd, {d});
            fill_normal(x, 40 + d, 3.0), fill_normal(w, 41, zc ? 0.1 : 1.0);
            const RmsNormParams p{1e-6f, zc};
            Tensor want = make_tensor(DType::kF64, {n, d});
            ASSERT_TRUE(env.ref.rms_norm(x, w, want, p, env.ref_stream).ok());
            const std::string what = std::string("rms_norm x ") + dt(ad) + " w " + dt(wd) + " d=" + std::to_string(d) +
                                     " n=" + std::to_string(n) + (zc ? " zero-centred" : "");
            const Tensor x_dev = env.up(x), w_dev = env.up(w), got = env.empty(ad, {n, d});
            ASSERT_TRUE(env.ops().rms_norm(x_dev, w_dev, got, p, env.stream()).ok());
            expect_close(env.down(got), want, tol_for(ad, 1e-12), what);
            ASSERT_TRUE(env.ops().rms_norm(x_dev, w_dev, x_dev, p, env.stream()).ok());
            expect_close(env.down(x_dev), want, tol_for(ad, 1e-12), what + " in place");
          }
  // Per-head norm over a strided [n, heads, hd] view (q of a fused qkv row), as the model calls it.
  for (DType ad : {DType::kF32, DType::kBF16}) {
    const int64_t n = 5, heads = 3, hd = 128, row = heads * hd + 64;
    Tensor buf = make_tensor(ad, {n, row}), w = make_tensor(DType::kBF16, {hd});
    fill_normal(buf, 42, 2.0), fill_normal(w, 43);
    Tensor view = buf.slice(1, 0, heads * hd);
    view.ndim = 3, view.shape = {n, heads, hd, 0}, view.stride = {row, hd, 1, 0};
    Tensor want = make_tensor(DType::kF64, {n, heads, hd});
    ASSERT_TRUE(env.ref.rms_norm(view, w, want, {}, env.ref_stream).ok());
    Tensor dev = env.up(buf);
    Tensor dview = view;
    dview.buffer = dev.buffer;
    ASSERT_TRUE(env.ops().rms_norm(dview, env.up(w), dview, {}, env.stream()).ok());
    Tensor back = env.down(dev);
    Tensor bview = view;
    bview.buffer = back.buffer;
    expect_close(bview, want, tol_for(ad, 1e-12), std::string("rms_norm per head ") + dt(ad));
  }
}

TEST(OpsCuda, Rope) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  for (DType ad : {DType::kF32, DType::kBF16})
    for (int64_t hd : {64, 128, 80})
      for (bool partial : {false, true})
        for (bool interleaved : {false, true})
          for (float factor : {1.0f, 1.3f}) {
            const int64_t n = 7, heads = 3, rot = partial ? hd / 2 : hd;
            Tensor x = make_tensor(ad, {n, heads, hd}), pos = make_tensor(DType::kI32, {n});
            Tensor inv_freq = make_tensor(DType::kF32, {rot / 2});
            fill_normal(x, 50 + hd);
            const int positions[] = {0, 1, 5, 127, 4096, 31999, 131071};
            for (int64_t i = 0; i < n; ++i) set_value(pos, i, positions[i]);
            for (int64_t i = 0; i < rot / 2; ++i)
              set_value(inv_freq, i, static_cast<float>(1.0 / std::pow(1e6, 2.0 * static_cast<double>(i) / static_cast<double>(rot))));
            const RopeParams p{rot, interleaved, factor};
            Tensor want = make_tensor(DType::kF64, {n, heads, hd});
            ASSERT_TRUE(env.ref.rope(x, pos, inv_freq, want, p, env.ref_stream).ok());
            const std::string what = std::string("rope ") + dt(ad) + " hd=" + std::to_string(hd) + " rot=" +
                                     std::to_string(rot) + (interleaved ? " interleaved" : " rotate-half") +
                                     " factor=" + std::to_string(factor);
            const Tensor x_dev = env.up(x), pos_dev = env.up(pos), f_dev = env.up(inv_freq);
            const Tensor got = env.empty(ad, {n, heads, hd});
            ASSERT_TRUE(env.ops().rope(x_dev, pos_dev, f_dev, got, p, env.stream()).ok());
            expect_close(env.down(got), want, tol_for(ad, 1e-12), what);
            ASSERT_TRUE(env.ops().rope(x_dev, pos_dev, f_dev, x_dev, p, env.stream()).ok());
            expect_close(env.down(x_dev), want, tol_for(ad, 1e-12), what + " in place");
          }
}

TEST(OpsCuda, SwigluSoftmaxAdd) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  for (DType ad : {DType::kF32, DType::kBF16})
    for (int64_t n : {1, 7, 33})
      for (int64_t m : {1, 17, 1000, 2049}) {
        // gate and up are the two column halves of one [n, 2m] tensor, as a fused gate_up output.
        Tensor gu = make_tensor(ad, {n, 2 * m}), b = make_tensor(ad, {n, m});
        fill_normal(gu, 60 + m, 4.0), fill_normal(b, 61);
        Tensor want_s = make_tensor(DType::kF64, {n, m}), want_x = make_tensor(DType::kF64, {n, m});
        Tensor want_a = make_tensor(DType::kF64, {n, m});
        ASSERT_TRUE(env.ref.swiglu(gu.slice(1, 0, m), gu.slice(1, m, m), want_s, env.ref_stream).ok());
        ASSERT_TRUE(env.ref.softmax(gu.slice(1, 0, m), want_x, env.ref_stream).ok());
        ASSERT_TRUE(env.ref.add(gu.slice(1, m, m), b, want_a, env.ref_stream).ok());
        const std::string size = std::string(" ") + dt(ad) + " n=" + std::to_string(n) + " m=" + std::to_string(m);
        const Tensor gu_dev = env.up(gu), b_dev = env.up(b), got = env.empty(ad, {n, m});
        const Tensor gate = gu_dev.slice(1, 0, m), up = gu_dev.slice(1, m, m);
        ASSERT_TRUE(env.ops().swiglu(gate, up, got, env.stream()).ok());
        expect_close(env.down(got), want_s, tol_for(ad, 1e-12), "swiglu" + size);
        ASSERT_TRUE(env.ops().softmax(gate, got, env.stream()).ok());
        expect_close(env.down(got), want_x, tol_for(ad, 1e-12), "softmax" + size);
        ASSERT_TRUE(env.ops().add(up, b_dev, got, env.stream()).ok());
        expect_close(env.down(got), want_a, tol_for(ad, 1e-12), "add" + size);
      }
}

TEST(OpsCuda, Convert) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  for (DType from : {DType::kF32, DType::kBF16})
    for (DType to : {DType::kF32, DType::kBF16})
      for (int64_t d : {1, 17, 2049}) {
        Tensor x = make_tensor(from, {7, d});
        fill_normal(x, 70 + d, 100.0);
        Tensor want = make_tensor(to, {7, d});
        ASSERT_TRUE(env.ref.convert(x, want, env.ref_stream).ok());
        const Tensor got = env.empty(to, {7, d});
        ASSERT_TRUE(env.ops().convert(env.up(x), got, env.stream()).ok());
        expect_close(env.down(got), want, 0, std::string("convert ") + dt(from) + " -> " + dt(to) + " d=" + std::to_string(d));
      }
}

}  // namespace
}  // namespace ft::test
