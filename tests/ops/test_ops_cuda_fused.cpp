// cuda fused ops (add_rms_norm_matmul, qk_norm_rope_store, mla_rope_store) against the ref ops, with f32 and bf16
// activations;
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
          p.q_w.defined() ? env.up(p.q_w) : Tensor{},
          p.k_w.defined() ? env.up(p.k_w) : Tensor{},
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
// and bf16 norm weights, zero-centred or not, with a bias (added to the fp32 sums); the rest add, rms_norm and matmul
// (5 and 33 rows, f32 weights, d = 20, f32 rows of 4096 past the shared memory at 3 and 4 rows). d = 2880: gpt-oss's
// rows, 12 chunks a lane.
TEST(OpsCuda, AddRmsNormMatmul) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  const int64_t shapes[][2] = {{20, 9}, {128, 24}, {2048, 130}, {2048, 5000}, {2880, 136}, {4096, 64}};
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
            if (!p.q_w.defined()) continue;
            QkTensors one_norm = device_copies(env, p);
            one_norm.k_w = Tensor{};
            EXPECT_FALSE(run_qk_fused(env.ops(), env.stream(), p, one_norm).ok()) << what << ": q_w without k_w";
          }
}

// mla_rope_store problems: q, the shared rope key, k_nope and v as the latent attention lays them out, views of one
// row per token (the queries, the rope key of the latent, kv_b's output with each head's k_nope then v).
struct MlaCase {
  const char* name;
  int64_t n_head, nope, rot, hd_v;
  bool interleaved;
  float factor;
};

inline constexpr MlaCase kMlaCases[] = {
    {"deepseek-v3 16 heads", 16, 128, 64, 128, true, 1.0f},
    {"fixture", 4, 16, 8, 16, true, 1.0f},
    {"rotate-half, scaled", 3, 24, 40, 16, false, 1.3f},
};

struct MlaTensors {
  Tensor rows, k_cache, v_cache, keys;  // keys [n, H, nope + rot]: the composition's assembled keys
  const MlaCase* c;
  Tensor q() const { return head_view(rows, 0, c->n_head, c->nope + c->rot, c->nope + c->rot); }
  Tensor k_rope() const { return head_view(rows, c->n_head * (c->nope + c->rot), 1, c->rot, c->rot); }
  Tensor kv(int64_t col, int64_t width) const {
    return head_view(rows, c->n_head * (c->nope + c->rot) + c->rot + col, c->n_head, width, c->nope + c->hd_v);
  }
  Tensor k_nope() const { return kv(0, c->nope); }
  Tensor v() const { return kv(c->nope, c->hd_v); }
};

// mla_rope_store's inputs and what it writes: the op, or the ops it fuses (rope, rope, two converts, kv_store).
Status run_mla(const OpTable& ops, Stream& s, const MlaTensors& t, const Tensor& positions, const Tensor& inv_freq,
               const Tensor& slots, const RopeParams& rope, bool fused) {
  if (fused)
    return ops.mla_rope_store(t.q(), t.k_rope(), t.k_nope(), t.v(), positions, inv_freq, slots, t.k_cache, t.v_cache,
                              rope, s);
  const Tensor q_rope = t.q().slice(2, t.c->nope, t.c->rot), k_rope = t.k_rope();
  FT_RETURN_IF_ERROR(ops.rope(q_rope, positions, inv_freq, q_rope, rope, s));
  FT_RETURN_IF_ERROR(ops.rope(k_rope, positions, inv_freq, k_rope, rope, s));
  Tensor every_head = k_rope;
  every_head.shape[1] = t.c->n_head;
  every_head.stride[1] = 0;
  FT_RETURN_IF_ERROR(ops.convert(t.k_nope(), t.keys.slice(2, 0, t.c->nope), s));
  FT_RETURN_IF_ERROR(ops.convert(every_head, t.keys.slice(2, t.c->nope, t.c->rot), s));
  return ops.kv_store(t.keys, t.v(), slots, t.k_cache, t.v_cache, s);
}

// Against the cuda ops it fuses bit for bit (0); against ref (float64 rotation, the same roundings) as rope's and
// kv_store's: f32 rows 1e-12, bf16 kBf16Tol, values unchanged (0). One case holds a padding row (slot -1), which
// stores nothing: against the cuda composition only (ref's kv_store refuses the slot).
TEST(OpsCuda, MlaRopeStore) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  for (const MlaCase& c : kMlaCases)
    for (DType ad : {DType::kF32, DType::kBF16})
      for (DType cd : {DType::kF32, DType::kBF16})
        for (int64_t n : {1, 7, 33}) {
          const std::string what = std::string("mla_rope_store ") + c.name + " act " + dt(ad) + " cache " + dt(cd) +
                                   " n=" + std::to_string(n);
          const int64_t qk = c.nope + c.rot, width = c.n_head * qk + c.rot + c.n_head * (c.nope + c.hd_v);
          const Tensor rows = make_tensor(ad, {n, width});
          fill_normal(rows, 90 + n + c.rot, 2.0);
          const Tensor positions = make_tensor(DType::kI32, {n}), slots = make_tensor(DType::kI32, {n});
          const int at[] = {0, 1, 5, 127, 4096, 31999, 131071};
          const int64_t page_size = 16, n_pages = n / page_size + 2;
          for (int64_t i = 0; i < n; ++i) {
            set_value(positions, i, at[i % 7] + i / 7);
            set_value(slots, i, static_cast<double>((i * 37 + 5) % (n_pages * page_size)));
          }
          const bool padding = n == 7;
          if (padding) set_value(slots, 3, -1);
          const Tensor inv_freq = make_tensor(DType::kF32, {c.rot / 2});
          for (int64_t i = 0; i < c.rot / 2; ++i)
            set_value(inv_freq, i, 1.0 / std::pow(1e4, 2.0 * static_cast<double>(i) / static_cast<double>(c.rot)));
          const Tensor k_cache = make_tensor(cd, {n_pages, page_size, c.n_head, qk});
          const Tensor v_cache = make_tensor(cd, {n_pages, page_size, c.n_head, c.hd_v});
          fill_normal(k_cache, 91), fill_normal(v_cache, 92);
          const RopeParams rope{c.rot, c.interleaved, c.factor};
          const auto on_device = [&] {
            return MlaTensors{env.up(rows), env.up(k_cache), env.up(v_cache), env.empty(ad, {n, c.n_head, qk}), &c};
          };
          const MlaTensors got = on_device(), unfused = on_device();
          const Tensor pos_d = env.up(positions), freq_d = env.up(inv_freq), slots_d = env.up(slots);
          ASSERT_TRUE(run_mla(env.ops(), env.stream(), got, pos_d, freq_d, slots_d, rope, true).ok()) << what;
          ASSERT_TRUE(run_mla(env.ops(), env.stream(), unfused, pos_d, freq_d, slots_d, rope, false).ok()) << what;
          const Tensor got_rows = env.down(got.rows), got_k = env.down(got.k_cache), got_v = env.down(got.v_cache);
          const MlaTensors got_host{got_rows, got_k, got_v, Tensor{}, &c}, input{rows, k_cache, v_cache, Tensor{}, &c};
          const MlaTensors unfused_host{env.down(unfused.rows), Tensor{}, Tensor{}, Tensor{}, &c};
          expect_close(got_host.q(), unfused_host.q(), 0, what + " q vs the ops it fuses");
          expect_close(got_host.k_rope(), input.k_rope(), 0, what + " k_rope left as it was");
          expect_close(got_k, env.down(unfused.k_cache), 0, what + " k cache vs the ops it fuses");
          expect_close(got_v, env.down(unfused.v_cache), 0, what + " v cache vs the ops it fuses");
          if (padding) continue;
          // The rope key the composition rotated in place is left as it was by the op: compare the queries only.
          const MlaTensors want{copy_of(rows), copy_of(k_cache), copy_of(v_cache), make_tensor(ad, {n, c.n_head, qk}),
                                &c};
          ASSERT_TRUE(run_mla(env.ref, env.ref_stream, want, positions, inv_freq, slots, rope, false).ok()) << what;
          expect_close(got_host.q(), want.q(), tol_for(ad, 1e-12), what + " q");
          expect_close(got_k, want.k_cache, cd == DType::kBF16 || ad == DType::kBF16 ? kBf16Tol : 1e-12,
                       what + " k cache");
          expect_close(got_v, want.v_cache, 0, what + " v cache");
        }
}

}  // namespace
}  // namespace ft::test
