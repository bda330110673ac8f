// cuda fused ops (add_rms_norm_matmul, qk_norm_rope_store, mla_latent_store) against the ref ops, with f32 and bf16
// activations;
// skipped without a GPU. qk_norm_rope_store also against the cuda ops it fuses: bit for bit the same (0), the same
// sums in the same order, the same roundings. Against ref (float64 math, the same roundings to the activation dtype
// between the fused steps): f32 row ops 1e-12, bf16 outputs kBf16Tol (3e-5); values go to the cache unchanged (0),
// keys as the rows they are copied from (a bf16 cache: kBf16Tol).
#include <string>

#include "backend/composed_ops.h"
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

// mla_latent_store problems: the latent projection's rows of a token ([q | latent | rope key], the key row a view of
// them) and the queries' rows ([q_nope | q_rope] a head), as the latent attention lays them out.
struct LatentCase {
  const char* name;
  int64_t n_head, kv_lora, rot;
  bool interleaved, zero_centered;
};
inline constexpr LatentCase kLatentCases[] = {
    {"DeepSeek-V3 heads", 16, 512, 64, false, false},
    {"the fixture's heads, interleaved, zero-centred", 4, 32, 8, true, true},
};

struct LatentTensors {
  Tensor lat, q_rows, q_out, k_cache;  // lat [n, 3 + kv_lora + rot], q_rows [n, H (5 + rot)], q_out [n, H, rot + 2]
  const LatentCase* c;
  Tensor keys() const {
    Tensor k = lat.slice(1, 3, c->kv_lora + c->rot);
    return Tensor{k.dtype, 3, {k.shape[0], 1, k.shape[1], 0}, {k.stride[0], k.shape[1], 1, 0}, k.buffer, k.offset};
  }
  Tensor q_rope() const {
    Tensor q = q_rows;
    return Tensor{q.dtype,
                  3,
                  {q.shape[0], c->n_head, c->rot, 0},
                  {q.stride[0], 5 + c->rot, 1, 0},
                  q.buffer,
                  q.offset + dtype_bytes(q.dtype, 5)};
  }
  Tensor q_lat_rope() const { return q_out.slice(2, 2, c->rot); }
};

// mla_latent_store's inputs and what it writes: the op, or the ops it fuses (composed_ops.h).
Status run_latent(const OpTable& ops, Stream& s, const LatentTensors& t, const Tensor& norm_w, const Tensor& positions,
                  const Tensor& inv_freq, const Tensor& slots, const RmsNormParams& norm, const RopeParams& rope,
                  bool fused) {
  if (fused)
    return ops.mla_latent_store(t.keys(), norm_w, t.q_rope(), t.q_lat_rope(), positions, inv_freq, slots, t.k_cache,
                                norm, rope, s);
  return mla_latent_store_in_turn(ops, t.keys(), norm_w, t.q_rope(), t.q_lat_rope(), positions, inv_freq, slots,
                                  t.k_cache, norm, rope, s);
}

// Against the cuda ops it fuses bit for bit (0: the latent rows, the cache, the rotated queries); against ref
// (float64 norm and rotation, the same roundings) as rms_norm's, rope's and kv_store's: f32 1e-12, bf16 kBf16Tol.
// One case holds a padding row (slot -1), which stores nothing: against the cuda composition only (ref's kv_store
// refuses the slot).
TEST(OpsCuda, MlaLatentStore) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  for (const LatentCase& c : kLatentCases)
    for (DType ad : {DType::kF32, DType::kBF16})
      for (DType cd : {DType::kF32, DType::kBF16})
        for (int64_t n : {1, 7, 33}) {
          const std::string what = std::string("mla_latent_store ") + c.name + " act " + dt(ad) + " cache " + dt(cd) +
                                   " n=" + std::to_string(n);
          const Tensor lat = make_tensor(ad, {n, 3 + c.kv_lora + c.rot});
          const Tensor q_rows = make_tensor(ad, {n, c.n_head * (5 + c.rot)});
          const Tensor norm_w = make_tensor(DType::kBF16, {c.kv_lora});
          fill_normal(lat, 70 + n, 2.0), fill_normal(q_rows, 71 + n, 2.0), fill_normal(norm_w, 72);
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
          const Tensor k_cache = make_tensor(cd, {n_pages, page_size, 1, c.kv_lora + c.rot});
          const Tensor q_out = make_tensor(ad, {n, c.n_head, c.rot + 2});
          fill_normal(k_cache, 73), fill_normal(q_out, 74);
          RmsNormParams norm;
          norm.zero_centered = c.zero_centered;
          const RopeParams rope{c.rot, c.interleaved, 1.25f};
          const auto on_device = [&] {
            return LatentTensors{env.up(lat), env.up(q_rows), env.up(q_out), env.up(k_cache), &c};
          };
          const LatentTensors got = on_device(), unfused = on_device();
          const Tensor w_d = env.up(norm_w), pos_d = env.up(positions), freq_d = env.up(inv_freq);
          const Tensor slots_d = env.up(slots);
          ASSERT_TRUE(run_latent(env.ops(), env.stream(), got, w_d, pos_d, freq_d, slots_d, norm, rope, true).ok())
              << what;
          ASSERT_TRUE(run_latent(env.ops(), env.stream(), unfused, w_d, pos_d, freq_d, slots_d, norm, rope, false).ok())
              << what;
          const Tensor got_lat = env.down(got.lat), got_q = env.down(got.q_out), got_k = env.down(got.k_cache);
          expect_close(got_lat, env.down(unfused.lat), 0, what + " latent rows vs the ops it fuses");
          expect_close(got_q, env.down(unfused.q_out), 0, what + " queries vs the ops it fuses");
          expect_close(got_k, env.down(unfused.k_cache), 0, what + " cache vs the ops it fuses");
          if (padding) continue;
          const LatentTensors want{copy_of(lat), copy_of(q_rows), copy_of(q_out), copy_of(k_cache), &c};
          ASSERT_TRUE(
              run_latent(env.ref, env.ref_stream, want, norm_w, positions, inv_freq, slots, norm, rope, false).ok())
              << what;
          expect_close(got_lat, want.lat, tol_for(ad, 1e-12), what + " latent rows");
          expect_close(got_q, want.q_out, tol_for(ad, 1e-12), what + " queries");
          expect_close(got_k, want.k_cache, cd == DType::kBF16 || ad == DType::kBF16 ? kBf16Tol : 1e-12,
                       what + " cache");
        }
}

}  // namespace
}  // namespace ft::test
