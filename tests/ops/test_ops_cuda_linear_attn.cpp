// cuda linear-attention ops (conv1d_silu, gated_delta_chunked, gated_delta_step, rms_norm_gated, sigmoid_mul)
// against the ref ops (the delta rule token by token in float64), with f32 and bf16 activations; skipped without
// a GPU. Batches mix a fresh sequence with sequences continuing from a random f32 state, lengths 1, 7 and 130
// (three chunks of 64, the last partial); head and channel counts are odd or cross the kernels' column blocks.
// Tolerances (NMSE): f32 row ops and the conv round a few times per element: 1e-12; the delta rule carries an
// fp32 state through 130 tokens of dk-long sums: 1e-9 (outputs and final states); bf16 outputs are one rounding
// of an fp32 value: kBf16Tol (3e-5). States stay f32 with bf16 activations too, so their bounds do not change:
// the conv state holds copies of the inputs (exact, 0), the delta state 1e-9.
#include <string>

#include "recurrent_batch.h"
#include "test_ops_cuda_env.h"

namespace ft::test {
namespace {

const char* dt(DType t) { return dtype_name(t); }
double tol_for(DType out, double f32_tol) { return out == DType::kBF16 ? kBf16Tol : f32_tol; }

// The view `host_view` of a host tensor, over the device copy `dev_base` of that tensor.
Tensor on(const Tensor& host_view, const Tensor& dev_base) {
  Tensor t = host_view;
  t.buffer = dev_base.buffer;
  return t;
}

// A batch's meta with its tensors on the device.
RecurrentMeta device_meta(const CudaEnv& env, const RecurrentBatch& b) {
  return {env.up(b.q_start), env.up(b.kv_len), env.up(b.slots), b.meta.n_seq};
}

TEST(OpsCuda, Conv1dSilu) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  for (DType ad : {DType::kF32, DType::kBF16})
    for (DType wd : {DType::kF32, DType::kBF16})
      for (int64_t c : {1, 37, 131, 300})
        for (int64_t kernel : {2, 4})
          for (const auto& lengths : kRecurrentBatches) {
            const RecurrentBatch b = make_recurrent_batch(lengths);
            const int64_t n_slots = static_cast<int64_t>(lengths.size()) + 1;
            Tensor xbuf = make_tensor(ad, {b.n_rows, c + 5}), w = make_tensor(wd, {c, kernel});
            fill_normal(xbuf, 80 + c), fill_normal(w, 81);
            const Tensor x = xbuf.slice(1, 3, c);  // strided rows, as a column slice of a projection
            Tensor state0 = make_tensor(DType::kF32, {n_slots, kernel - 1, c});
            fill_normal(state0, 82);
            Tensor want = make_tensor(DType::kF64, {b.n_rows, c});
            Tensor want_state = make_tensor(DType::kF32, {n_slots, kernel - 1, c});
            copy_values(state0, want_state);
            ASSERT_TRUE(env.ref.conv1d_silu(x, w, b.meta, want_state, want, env.ref_stream).ok());
            const std::string what = std::string("conv1d_silu x ") + dt(ad) + " w " + dt(wd) + " c=" +
                                     std::to_string(c) + " kernel=" + std::to_string(kernel) + lengths_name(lengths);
            const Tensor state = env.up(state0), got = env.empty(ad, {b.n_rows, c});
            ASSERT_TRUE(env.ops()
                            .conv1d_silu(on(x, env.up(xbuf)), env.up(w), device_meta(env, b), state, got, env.stream())
                            .ok())
                << what;
            expect_close(env.down(got), want, tol_for(ad, 1e-12), what);
            expect_close(env.down(state), want_state, 0, what + " state");
          }
}

TEST(OpsCuda, GatedDelta) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  // The fixture's heads; odd dims; the real model's dk = dv = 128 (4 step and 8 chunked column blocks); dv 40
  // ends in a partial column block of both kernels.
  const DeltaShape shapes[] = {{2, 4, 16, 16}, {3, 3, 33, 17}, {1, 2, 128, 128}, {2, 6, 64, 40}};
  for (DType ad : {DType::kF32, DType::kBF16})
    for (const DeltaShape& sh : shapes)
      for (DType pd : {DType::kF32, DType::kBF16})
        for (const auto& lengths : kRecurrentBatches) {
          const RecurrentBatch b = make_recurrent_batch(lengths);
          const int64_t n = b.n_rows, n_slots = static_cast<int64_t>(lengths.size()) + 1;
          const DeltaProblem d = make_delta_problem(env.ref, env.ref_stream, sh, ad, pd, b, n_slots);
          const Tensor qkv_dev = env.up(d.qkv), ab_dev = env.up(d.ab);
          const GatedDeltaParams p_dev{env.up(d.a_log), env.up(d.dt_bias), 1e-6f};
          const RecurrentMeta meta = device_meta(env, b);
          for (bool chunked : {true, false}) {
            const std::string what = std::string(chunked ? "gated_delta_chunked" : "gated_delta_step") + " act " +
                                     dt(ad) + " n_k=" + std::to_string(sh.n_k) + " n_v=" + std::to_string(sh.n_v) +
                                     " dk=" + std::to_string(sh.dk) + " dv=" + std::to_string(sh.dv) + " params " +
                                     dt(pd) + lengths_name(lengths);
            const Tensor got = env.empty(ad, {n, sh.n_v, sh.dv}), state = env.up(d.state0);
            const auto fn = chunked ? env.ops().gated_delta_chunked : env.ops().gated_delta_step;
            ASSERT_TRUE(fn(on(d.q, qkv_dev), on(d.k, qkv_dev), on(d.v, qkv_dev), on(d.a, ab_dev), on(d.b, ab_dev), meta,
                           state, got, p_dev, env.stream())
                            .ok())
                << what;
            expect_close(env.down(got), d.want, tol_for(ad, 1e-9), what);
            expect_close(env.down(state), d.want_state, 1e-9, what + " state");
          }
        }
}

TEST(OpsCuda, RmsNormGatedSigmoidMul) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  for (DType ad : {DType::kF32, DType::kBF16})
    for (DType wd : {DType::kF32, DType::kBF16})
      for (int64_t d : {1, 17, 128, 300})
        for (int64_t n : {1, 7}) {
          // x and z are [n, 3, d] head views; the gate of sigmoid_mul is per element, one per row, or the second
          // half of interleaved [query | gate] head rows (strided heads, as gated attention passes it).
          Tensor x = make_tensor(ad, {n, 3, d}), z = make_tensor(ad, {n, 3, d}), w = make_tensor(wd, {d});
          Tensor g1 = make_tensor(ad, {n, 3, 1}), qg = make_tensor(ad, {n, 3, 2 * d});
          fill_normal(x, 100 + d, 3.0), fill_normal(z, 101, 2.0), fill_normal(w, 102), fill_normal(g1, 103, 2.0);
          fill_normal(qg, 104, 2.0);
          const Tensor gs = qg.slice(2, d, d);
          Tensor want_n = make_tensor(DType::kF64, {n, 3, d}), want_s = make_tensor(DType::kF64, {n, 3, d});
          Tensor want_r = make_tensor(DType::kF64, {n, 3, d}), want_i = make_tensor(DType::kF64, {n, 3, d});
          ASSERT_TRUE(env.ref.rms_norm_gated(x, w, z, want_n, 1e-6f, env.ref_stream).ok());
          ASSERT_TRUE(env.ref.sigmoid_mul(x, z, want_s, env.ref_stream).ok());
          ASSERT_TRUE(env.ref.sigmoid_mul(x, g1, want_r, env.ref_stream).ok());
          ASSERT_TRUE(env.ref.sigmoid_mul(x, gs, want_i, env.ref_stream).ok());
          const std::string size = std::string(" act ") + dt(ad) + " w " + dt(wd) + " d=" + std::to_string(d) +
                                   " n=" + std::to_string(n);
          const double tol = tol_for(ad, 1e-12);
          const Tensor x_dev = env.up(x), z_dev = env.up(z), w_dev = env.up(w), g1_dev = env.up(g1);
          const Tensor got = env.empty(ad, {n, 3, d});
          ASSERT_TRUE(env.ops().rms_norm_gated(x_dev, w_dev, z_dev, got, 1e-6f, env.stream()).ok());
          expect_close(env.down(got), want_n, tol, "rms_norm_gated" + size);
          ASSERT_TRUE(env.ops().sigmoid_mul(x_dev, z_dev, got, env.stream()).ok());
          expect_close(env.down(got), want_s, tol, "sigmoid_mul" + size);
          ASSERT_TRUE(env.ops().sigmoid_mul(x_dev, g1_dev, got, env.stream()).ok());
          expect_close(env.down(got), want_r, tol, "sigmoid_mul per row" + size);
          ASSERT_TRUE(env.ops().sigmoid_mul(x_dev, on(gs, env.up(qg)), got, env.stream()).ok());
          expect_close(env.down(got), want_i, tol, "sigmoid_mul strided gate heads" + size);
          // In place, last: both write over x.
          const Tensor x2_dev = env.up(x);
          ASSERT_TRUE(env.ops().rms_norm_gated(x_dev, w_dev, z_dev, x_dev, 1e-6f, env.stream()).ok());
          expect_close(env.down(x_dev), want_n, tol, "rms_norm_gated in place" + size);
          ASSERT_TRUE(env.ops().sigmoid_mul(x2_dev, z_dev, x2_dev, env.stream()).ok());
          expect_close(env.down(x2_dev), want_s, tol, "sigmoid_mul in place" + size);
        }
}

}  // namespace
}  // namespace ft::test
