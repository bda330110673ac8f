// cpu linear-attention ops (conv1d_silu, gated_delta_chunked, gated_delta_step, rms_norm_gated, sigmoid_mul)
// against the ref ops, which run the delta rule token by token in float64. Batches mix a fresh sequence with
// sequences continuing from a random state, and lengths 1, 7 and 130 (three chunks of 64, the last partial).
// Tolerances (NMSE): the row ops round a few times per element (1e-12); the delta rule carries an fp32 state
// through 130 tokens of dk-long sums (1e-9); outputs and final states are both checked.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "recurrent_batch.h"

namespace ft::test {
namespace {

TEST(OpsCpu, Conv1dSilu) {
  OpEnv env;
  for (DType wd : {DType::kF32, DType::kBF16})
    for (int64_t c : {1, 37, 131})
      for (int64_t kernel : {2, 4})
        for (const auto& lengths : kRecurrentBatches) {
          const RecurrentBatch b = make_recurrent_batch(lengths);
          const int64_t n_slots = static_cast<int64_t>(lengths.size()) + 1;
          Tensor xbuf = make_tensor(DType::kF32, {b.n_rows, c + 5}), w = make_tensor(wd, {c, kernel});
          fill_normal(xbuf, 80 + c), fill_normal(w, 81);
          const Tensor x = xbuf.slice(1, 3, c);  // strided rows, as a column slice of a projection
          Tensor state0 = make_tensor(DType::kF32, {n_slots, kernel - 1, c});
          fill_normal(state0, 82);
          Tensor want = make_tensor(DType::kF64, {b.n_rows, c}), got = make_tensor(DType::kF32, {b.n_rows, c});
          Tensor want_state = make_tensor(DType::kF32, {n_slots, kernel - 1, c});
          copy_values(state0, want_state);
          ASSERT_TRUE(env.ref.conv1d_silu(x, w, b.meta, want_state, want, env.ref_stream).ok());
          for_each_isa([&](const std::string& isa) {
            std::ostringstream os;
            os << "conv1d_silu w " << dtype_name(wd) << " c=" << c << " kernel=" << kernel << lengths_name(lengths)
               << isa;
            const std::string what = os.str();
            Tensor state = make_tensor(DType::kF32, {n_slots, kernel - 1, c});
            copy_values(state0, state);
            ASSERT_TRUE(env.cpu.conv1d_silu(x, w, b.meta, state, got, env.cpu_stream).ok());
            expect_close(got, want, 1e-12, what);
            expect_close(state, want_state, 0, what + " state");
          });
        }
}

TEST(OpsCpu, GatedDelta) {
  OpEnv env;
  const DeltaShape shapes[] = {{2, 4, 16, 16}, {3, 3, 33, 17}, {1, 2, 128, 128}};
  for (const DeltaShape& sh : shapes)
    for (DType pd : {DType::kF32, DType::kBF16})
      for (const auto& lengths : kRecurrentBatches) {
        const RecurrentBatch b = make_recurrent_batch(lengths);
        const int64_t n = b.n_rows, n_slots = static_cast<int64_t>(lengths.size()) + 1;
        const DeltaProblem d = make_delta_problem(env.ref, env.ref_stream, sh, DType::kF32, pd, b, n_slots);
        const GatedDeltaParams p{d.a_log, d.dt_bias, 1e-6f};
        for_each_isa([&](const std::string& isa) {
          for (bool chunked : {true, false}) {
            std::ostringstream os;
            os << (chunked ? "gated_delta_chunked" : "gated_delta_step") << " n_k=" << sh.n_k << " n_v=" << sh.n_v
               << " dk=" << sh.dk << " dv=" << sh.dv << " params " << dtype_name(pd) << lengths_name(lengths) << isa;
            const std::string what = os.str();
            Tensor got = make_tensor(DType::kF32, {n, sh.n_v, sh.dv});
            Tensor state = make_tensor(DType::kF32, {n_slots, sh.n_v, sh.dk, sh.dv});
            copy_values(d.state0, state);
            const auto fn = chunked ? env.cpu.gated_delta_chunked : env.cpu.gated_delta_step;
            ASSERT_TRUE(fn(d.q, d.k, d.v, d.a, d.b, b.meta, state, got, p, env.cpu_stream).ok()) << what;
            expect_close(got, d.want, 1e-9, what);
            expect_close(state, d.want_state, 1e-9, what + " state");
          }
        });
      }
}

TEST(OpsCpu, RmsNormGatedSigmoidMul) {
  OpEnv env;
  for (DType wd : {DType::kF32, DType::kBF16})
    for (int64_t d : {1, 17, 128})
      for (int64_t n : {1, 7}) {
        // x and z are [n, 3, d] head views; the gate of sigmoid_mul is per element or one per row.
        Tensor x = make_tensor(DType::kF32, {n, 3, d}), z = make_tensor(DType::kF32, {n, 3, d});
        Tensor w = make_tensor(wd, {d}), g1 = make_tensor(DType::kF32, {n, 3, 1});
        fill_normal(x, 100 + d, 3.0), fill_normal(z, 101, 2.0), fill_normal(w, 102), fill_normal(g1, 103, 2.0);
        Tensor want_n = make_tensor(DType::kF64, {n, 3, d}), want_s = make_tensor(DType::kF64, {n, 3, d});
        Tensor want_r = make_tensor(DType::kF64, {n, 3, d}), got = make_tensor(DType::kF32, {n, 3, d});
        ASSERT_TRUE(env.ref.rms_norm_gated(x, w, z, want_n, 1e-6f, env.ref_stream).ok());
        ASSERT_TRUE(env.ref.sigmoid_mul(x, z, want_s, env.ref_stream).ok());
        ASSERT_TRUE(env.ref.sigmoid_mul(x, g1, want_r, env.ref_stream).ok());
        std::ostringstream os;
        os << " w " << dtype_name(wd) << " d=" << d << " n=" << n;
        const std::string size = os.str();
        for_each_isa([&](const std::string& isa) {
          ASSERT_TRUE(env.cpu.rms_norm_gated(x, w, z, got, 1e-6f, env.cpu_stream).ok());
          expect_close(got, want_n, 1e-12, "rms_norm_gated" + size + isa);
          Tensor inplace = make_tensor(DType::kF32, {n, 3, d});
          copy_values(x, inplace);
          ASSERT_TRUE(env.cpu.rms_norm_gated(inplace, w, z, inplace, 1e-6f, env.cpu_stream).ok());
          expect_close(inplace, want_n, 1e-12, "rms_norm_gated in place" + size + isa);
          ASSERT_TRUE(env.cpu.sigmoid_mul(x, z, got, env.cpu_stream).ok());
          expect_close(got, want_s, 1e-12, "sigmoid_mul" + size + isa);
          ASSERT_TRUE(env.cpu.sigmoid_mul(x, g1, got, env.cpu_stream).ok());
          expect_close(got, want_r, 1e-12, "sigmoid_mul per row" + size + isa);
        });
      }
}

}  // namespace
}  // namespace ft::test
