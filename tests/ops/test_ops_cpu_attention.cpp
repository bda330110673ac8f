// cpu kv_store and paged causal GQA attention against the ref ops: several sequences with different kv
// lengths (decode rows and prefill chunks mixed), shuffled page tables, page sizes 1 and 16, GQA ratios 1 to
// 8, sliding windows, sinks, f32 and bf16 caches, values that are the keys' leading dims (the latent cache).
// Tolerances (NMSE): kv_store is an exact copy (0); attention rounds q.k and the online softmax in fp32: 1e-10.
#include <gtest/gtest.h>

#include <string>

#include "attention_cases.h"
#include "op_harness.h"

namespace ft::test {
namespace {

TEST(OpsCpu, KvStore) {
  OpEnv env;
  for (DType cd : {DType::kF32, DType::kBF16})
    for (int64_t page_size : {1, 16})
      for (int64_t hd : {64, 80}) {
        const int64_t n = 33, n_kv = 2, n_pages = 80 / page_size + 3;
        Tensor k = make_tensor(DType::kF32, {n, n_kv, hd}), v = make_tensor(DType::kF32, {n, n_kv, hd + 16});
        Tensor slots = make_tensor(DType::kI32, {n});
        fill_normal(k, 80), fill_normal(v, 81);
        for (int64_t i = 0; i < n; ++i) set_value(slots, i, static_cast<double>((i * 37 + 5) % (n_pages * page_size)));
        Tensor kw = make_tensor(cd, {n_pages, page_size, n_kv, hd}), vw = make_tensor(cd, {n_pages, page_size, n_kv, hd + 16});
        Tensor kg = make_tensor(cd, {n_pages, page_size, n_kv, hd}), vg = make_tensor(cd, {n_pages, page_size, n_kv, hd + 16});
        ASSERT_TRUE(env.ref.kv_store(k, v, slots, kw, vw, env.ref_stream).ok());
        for_each_isa([&](const std::string& isa) {
          ASSERT_TRUE(env.cpu.kv_store(k, v, slots, kg, vg, env.cpu_stream).ok());
          const std::string what = std::string("kv_store ") + dtype_name(cd) + " page " + std::to_string(page_size) + isa;
          expect_close(kg, kw, 0, what + " k");
          expect_close(vg, vw, 0, what + " v");
        });
      }
}

// Keys only (v and v_cache undefined): the keys stored as with values, nothing else of the cache written.
TEST(OpsCpu, KvStoreKeysOnly) {
  OpEnv env;
  for (DType cd : {DType::kF32, DType::kBF16}) {
    const int64_t n = 33, hd = 72, page_size = 16, n_pages = 5;
    Tensor k = make_tensor(DType::kF32, {n, 1, hd}), slots = make_tensor(DType::kI32, {n});
    fill_normal(k, 82);
    for (int64_t i = 0; i < n; ++i) set_value(slots, i, static_cast<double>((i * 37 + 5) % (n_pages * page_size)));
    Tensor kw = make_tensor(cd, {n_pages, page_size, 1, hd}), kg = make_tensor(cd, {n_pages, page_size, 1, hd});
    fill_normal(kw, 83), copy_values(kw, kg);
    ASSERT_TRUE(env.ref.kv_store(k, Tensor{}, slots, kw, Tensor{}, env.ref_stream).ok());
    for_each_isa([&](const std::string& isa) {
      ASSERT_TRUE(env.cpu.kv_store(k, Tensor{}, slots, kg, Tensor{}, env.cpu_stream).ok());
      expect_close(kg, kw, 0, std::string("kv_store keys only ") + dtype_name(cd) + isa);
    });
    EXPECT_FALSE(env.cpu.kv_store(k, Tensor{}, slots, kg, kg, env.cpu_stream).ok()) << "a v_cache without v";
  }
}

void run_attention(OpEnv& env, const AttnCase& c) {
  // Sequences: {queries this step, kv length after it}: decode rows, a first prefill, a later chunk.
  const AttnProblem a =
      make_attention_problem(env.ref, env.ref_stream, c, DType::kF32, {{1, 1}, {1, 40}, {17, 17}, {5, 70}, {33, 45}});
  Tensor got = make_tensor(DType::kF32, {a.n, c.n_head, a.hd_v});
  for_each_isa([&](const std::string& isa) {
    ASSERT_TRUE(env.cpu.attention(a.q, a.k_cache, a.v_cache, a.meta, got, a.params, env.cpu_stream).ok());
    expect_close(got, a.want, 1e-10, a.label + isa);
  });
}

TEST(OpsCpu, Attention) {
  OpEnv env;
  const AttnCase cases[] = {
      {1, 1, 64, 16, 0, false, DType::kF32},       {2, 1, 64, 1, 0, false, DType::kF32},
      {8, 2, 128, 16, 0, false, DType::kBF16},     {8, 1, 80, 16, 0, false, DType::kF32},
      {16, 2, 64, 16, 7, false, DType::kF32},      {4, 2, 64, 1, 7, true, DType::kBF16},
      {8, 1, 64, 16, 0, true, DType::kF32},        {6, 2, 128, 16, 20, true, DType::kF32},
      {4, 1, 72, 16, 0, false, DType::kF32, true}, {16, 1, 576, 16, 0, false, DType::kBF16, true},
  };
  for (const AttnCase& c : cases) run_attention(env, c);
}

}  // namespace
}  // namespace ft::test
