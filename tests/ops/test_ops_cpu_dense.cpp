// cpu dense ops (embedding, matmul, matmul_heads, rms_norm, rope, swiglu, softmax, add, convert) against the ref ops.
// Ref writes f64 outputs from the same f32/bf16 inputs. Tolerances (NMSE): gathers and conversions are exact
// (0); matmul accumulates k products in fp32 lanes, error ~ eps^2 * k, so 1e-9 covers k = 2049; the row
// ops (norm, rope, swiglu, softmax, add) round a few times per element: 1e-12.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "op_harness.h"

namespace ft::test {
namespace {

const char* dt(DType t) { return dtype_name(t); }

TEST(OpsCpu, Embedding) {
  OpEnv env;
  for (DType td : {DType::kF32, DType::kBF16})
    for (int64_t d : {1, 17, 64, 1000}) {
      Tensor table = make_tensor(td, {1000, d}), ids = make_tensor(DType::kI32, {33});
      fill_normal(table, 1);
      for (int64_t i = 0; i < 33; ++i) set_value(ids, i, static_cast<double>((i * 389 + 7) % 1000));
      Tensor want = make_tensor(DType::kF64, {33, d}), got = make_tensor(DType::kF32, {33, d});
      ASSERT_TRUE(env.ref.embedding(table, ids, want, env.ref_stream).ok());
      for_each_isa([&](const std::string& isa) {
        ASSERT_TRUE(env.cpu.embedding(table, ids, got, env.cpu_stream).ok());
        expect_close(got, want, 0, std::string("embedding ") + dt(td) + " d=" + std::to_string(d) + isa);
      });
    }
}

TEST(OpsCpu, Matmul) {
  OpEnv env;
  const int64_t shapes[][2] = {{1, 1}, {17, 64}, {64, 17}, {1000, 33}, {37, 2049}, {130, 256}};  // {m, k}
  for (DType wd : {DType::kF32, DType::kBF16})
    for (const auto& mk : shapes)
      for (int64_t n : {1, 2, 3, 4, 5, 7, 33, 70})
        for (bool with_bias : {false, true}) {
          const int64_t m = mk[0], k = mk[1];
          if (n * m * k > 20'000'000) continue;  // keeps ref's time in check
          // x is a column slice of a wider buffer, so its rows are strided.
          Tensor xbuf = make_tensor(DType::kF32, {n, k + 3}), w = make_tensor(wd, {m, k});
          Tensor bias = with_bias ? make_tensor(wd, {m}) : Tensor{};
          fill_normal(xbuf, 10 + n), fill_normal(w, 20 + m);
          if (with_bias) fill_normal(bias, 30);
          const Tensor x = xbuf.slice(1, 2, k);
          Tensor want = make_tensor(DType::kF64, {n, m}), got = make_tensor(DType::kF32, {n, m});
          ASSERT_TRUE(env.ref.matmul(x, w, bias, want, env.ref_stream).ok());
          for_each_isa([&](const std::string& isa) {
            ASSERT_TRUE(env.cpu.matmul(x, w, bias, got, env.cpu_stream).ok());
            expect_close(got, want, 1e-9,
                         std::string("matmul w ") + dt(wd) + " n=" + std::to_string(n) + " m=" + std::to_string(m) +
                             " k=" + std::to_string(k) + (with_bias ? " bias" : "") + isa);
          });
        }
}

// Per-head weights: {heads, m, k} as multi-head latent attention's absorbed kv_b_proj takes them (a head's query
// into its latent, 128 -> 512, and the latent output back, 512 -> 128) and small odd ones; x a column slice of wider
// rows, w a slice of wider head blocks (strided heads, as the views of one projection the model passes).
TEST(OpsCpu, MatmulHeads) {
  OpEnv env;
  const int64_t shapes[][3] = {{3, 5, 7}, {4, 16, 8}, {16, 512, 128}, {16, 128, 512}};
  for (DType wd : {DType::kF32, DType::kBF16})
    for (const auto& hmk : shapes)
      for (int64_t n : {1, 3, 33}) {
        const int64_t heads = hmk[0], m = hmk[1], k = hmk[2];
        Tensor xbuf = make_tensor(DType::kF32, {n, heads, k + 3}), wbuf = make_tensor(wd, {heads, m + 2, k});
        fill_normal(xbuf, 40 + n), fill_normal(wbuf, 41 + m);
        const Tensor x = xbuf.slice(2, 1, k), w = wbuf.slice(1, 2, m);
        Tensor want = make_tensor(DType::kF64, {n, heads, m}), got = make_tensor(DType::kF32, {n, heads, m});
        ASSERT_TRUE(env.ref.matmul_heads(x, w, want, env.ref_stream).ok());
        for_each_isa([&](const std::string& isa) {
          ASSERT_TRUE(env.cpu.matmul_heads(x, w, got, env.cpu_stream).ok());
          expect_close(got, want, 1e-9,
                       std::string("matmul_heads w ") + dt(wd) + " n=" + std::to_string(n) + " heads=" +
                           std::to_string(heads) + " m=" + std::to_string(m) + " k=" + std::to_string(k) + isa);
        });
      }
  Tensor x = make_tensor(DType::kF32, {2, 3, 8}), w = make_tensor(DType::kF32, {4, 5, 8});
  Tensor out = make_tensor(DType::kF32, {2, 3, 5});
  EXPECT_FALSE(env.cpu.matmul_heads(x, w, out, env.cpu_stream).ok()) << "4 heads of weights for 3 of x";
}

TEST(OpsCpu, RmsNorm) {
  OpEnv env;
  for (DType wd : {DType::kF32, DType::kBF16})
    for (int64_t d : {1, 17, 64, 1000, 2049})
      for (bool zc : {false, true})
        for (int64_t n : {1, 3, 7}) {
          Tensor x = make_tensor(DType::kF32, {n, d}), w = make_tensor(wd, {d});
          fill_normal(x, 40 + d, 3.0), fill_normal(w, 41, zc ? 0.1 : 1.0);
          const RmsNormParams p{1e-6f, zc};
          Tensor want = make_tensor(DType::kF64, {n, d}), got = make_tensor(DType::kF32, {n, d});
          ASSERT_TRUE(env.ref.rms_norm(x, w, want, p, env.ref_stream).ok());
          for_each_isa([&](const std::string& isa) {
            const std::string what = std::string("rms_norm w ") + dt(wd) + " d=" + std::to_string(d) +
                                     " n=" + std::to_string(n) + (zc ? " zero-centred" : "") + isa;
            ASSERT_TRUE(env.cpu.rms_norm(x, w, got, p, env.cpu_stream).ok());
            expect_close(got, want, 1e-12, what);
            Tensor inplace = make_tensor(DType::kF32, {n, d});
            copy_values(x, inplace);
            ASSERT_TRUE(env.cpu.rms_norm(inplace, w, inplace, p, env.cpu_stream).ok());
            expect_close(inplace, want, 1e-12, what + " in place");
          });
        }
}

TEST(OpsCpu, Rope) {
  OpEnv env;
  for (int64_t hd : {64, 128, 80})
    for (bool partial : {false, true})
      for (bool interleaved : {false, true})
        for (float factor : {1.0f, 1.3f}) {
          const int64_t n = 7, heads = 3, rot = partial ? hd / 2 : hd;
          Tensor x = make_tensor(DType::kF32, {n, heads, hd}), pos = make_tensor(DType::kI32, {n});
          Tensor inv_freq = make_tensor(DType::kF32, {rot / 2});
          fill_normal(x, 50 + hd);
          const int positions[] = {0, 1, 5, 127, 4096, 31999, 131071};
          for (int64_t i = 0; i < n; ++i) set_value(pos, i, positions[i]);
          for (int64_t i = 0; i < rot / 2; ++i)
            set_value(inv_freq, i, static_cast<float>(1.0 / std::pow(1e6, 2.0 * static_cast<double>(i) / static_cast<double>(rot))));
          const RopeParams p{rot, interleaved, factor};
          Tensor want = make_tensor(DType::kF64, {n, heads, hd}), got = make_tensor(DType::kF32, {n, heads, hd});
          ASSERT_TRUE(env.ref.rope(x, pos, inv_freq, want, p, env.ref_stream).ok());
          for_each_isa([&](const std::string& isa) {
            const std::string what = "rope hd=" + std::to_string(hd) + " rot=" + std::to_string(rot) +
                                     (interleaved ? " interleaved" : " rotate-half") + " factor=" +
                                     std::to_string(factor) + isa;
            ASSERT_TRUE(env.cpu.rope(x, pos, inv_freq, got, p, env.cpu_stream).ok());
            expect_close(got, want, 1e-12, what);
            Tensor inplace = make_tensor(DType::kF32, {n, heads, hd});
            copy_values(x, inplace);
            ASSERT_TRUE(env.cpu.rope(inplace, pos, inv_freq, inplace, p, env.cpu_stream).ok());
            expect_close(inplace, want, 1e-12, what + " in place");
          });
        }
}

TEST(OpsCpu, SwigluSoftmaxAdd) {
  OpEnv env;
  for (int64_t n : {1, 7, 33})
    for (int64_t m : {1, 17, 1000, 2049}) {
      // gate and up are the two column halves of one [n, 2m] tensor, as a fused gate_up output.
      Tensor gu = make_tensor(DType::kF32, {n, 2 * m}), b = make_tensor(DType::kF32, {n, m});
      fill_normal(gu, 60 + m, 4.0), fill_normal(b, 61);
      const double extremes[] = {-1e4, -100, -30, 30, 100, 1e4};  // exp under- and overflow in silu and softmax
      for (int64_t i = 0; i < std::min<int64_t>(m, 6); ++i) set_value(gu, i, extremes[i]);
      const Tensor gate = gu.slice(1, 0, m), up = gu.slice(1, m, m);
      Tensor want_s = make_tensor(DType::kF64, {n, m}), want_x = make_tensor(DType::kF64, {n, m});
      Tensor want_a = make_tensor(DType::kF64, {n, m}), got = make_tensor(DType::kF32, {n, m});
      ASSERT_TRUE(env.ref.swiglu(gate, up, want_s, env.ref_stream).ok());
      ASSERT_TRUE(env.ref.softmax(gate, want_x, env.ref_stream).ok());
      ASSERT_TRUE(env.ref.add(up, b, want_a, env.ref_stream).ok());
      const std::string size = " n=" + std::to_string(n) + " m=" + std::to_string(m);
      for_each_isa([&](const std::string& isa) {
        ASSERT_TRUE(env.cpu.swiglu(gate, up, got, env.cpu_stream).ok());
        expect_close(got, want_s, 1e-12, "swiglu" + size + isa);
        ASSERT_TRUE(env.cpu.softmax(gate, got, env.cpu_stream).ok());
        expect_close(got, want_x, 1e-12, "softmax" + size + isa);
        ASSERT_TRUE(env.cpu.add(up, b, got, env.cpu_stream).ok());
        expect_close(got, want_a, 1e-12, "add" + size + isa);
      });
    }
}

TEST(OpsCpu, Convert) {
  OpEnv env;
  for (DType from : {DType::kF32, DType::kBF16})
    for (DType to : {DType::kF32, DType::kBF16})
      for (int64_t d : {1, 17, 2049}) {
        Tensor x = make_tensor(from, {7, d});
        fill_normal(x, 70 + d, 100.0);
        Tensor want = make_tensor(to, {7, d}), got = make_tensor(to, {7, d});
        ASSERT_TRUE(env.ref.convert(x, want, env.ref_stream).ok());
        for_each_isa([&](const std::string& isa) {
          ASSERT_TRUE(env.cpu.convert(x, got, env.cpu_stream).ok());
          expect_close(got, want, 0, std::string("convert ") + dt(from) + " -> " + dt(to) + " d=" + std::to_string(d) + isa);
        });
      }
}

}  // namespace
}  // namespace ft::test
