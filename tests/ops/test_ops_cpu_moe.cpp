// cpu moe_route and moe_experts against the ref ops. Routing: softmax (Qwen3-MoE) and sigmoid with a
// correction bias and grouped top-k (DeepSeek-V3), renormalised or not, scaled; ids must match exactly and
// weights to NMSE 1e-12 (fp32 scores vs float64). Experts: 8 or 128 experts, k 1/2/8, 1 to 33 tokens (the
// decode and the grouped prefill paths), f32 and bf16 weights; NMSE 1e-9 (two fp32 GEMMs).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "op_harness.h"

namespace ft::test {
namespace {

struct RouteCase {
  int64_t n_expert, k, n_group, topk_group;
  RouterScoring scoring;
  bool bias, norm;
  float scale;
};

TEST(OpsCpu, MoeRoute) {
  OpEnv env;
  const RouteCase cases[] = {
      {8, 1, 1, 1, RouterScoring::kSoftmax, false, false, 1.0f},
      {8, 2, 1, 1, RouterScoring::kSoftmax, false, true, 1.0f},
      {128, 8, 1, 1, RouterScoring::kSoftmax, false, true, 1.0f},
      {128, 8, 1, 1, RouterScoring::kSigmoid, true, true, 2.5f},
      {64, 8, 8, 4, RouterScoring::kSigmoid, true, true, 2.5f},
      {128, 8, 8, 3, RouterScoring::kSigmoid, true, false, 1.0f},
      {32, 4, 4, 2, RouterScoring::kSoftmax, true, true, 1.5f},
  };
  for (const RouteCase& c : cases)
    for (int64_t n : {1, 7, 33}) {
      Tensor logits = make_tensor(DType::kF32, {n, c.n_expert});
      fill_normal(logits, 100 + c.n_expert + n, 2.0);
      Tensor bias = c.bias ? make_tensor(DType::kF32, {c.n_expert}) : Tensor{};
      if (c.bias) fill_normal(bias, 101, 0.5);
      const MoeRouteParams p{c.scoring, c.k, c.n_group, c.topk_group, c.norm, c.scale};
      Tensor ids_want = make_tensor(DType::kI32, {n, c.k}), w_want = make_tensor(DType::kF64, {n, c.k});
      Tensor ids_got = make_tensor(DType::kI32, {n, c.k}), w_got = make_tensor(DType::kF32, {n, c.k});
      ASSERT_TRUE(env.ref.moe_route(logits, bias, ids_want, w_want, p, env.ref_stream).ok());
      for_each_isa([&](const std::string& isa) {
        ASSERT_TRUE(env.cpu.moe_route(logits, bias, ids_got, w_got, p, env.cpu_stream).ok());
        const std::string what = "moe_route E=" + std::to_string(c.n_expert) + " k=" + std::to_string(c.k) +
                                 " groups " + std::to_string(c.n_group) + "/" + std::to_string(c.topk_group) +
                                 (c.scoring == RouterScoring::kSigmoid ? " sigmoid" : " softmax") + " n=" +
                                 std::to_string(n) + isa;
        expect_equal_ints(ids_got, ids_want, what + " ids");
        expect_close(w_got, w_want, 1e-12, what + " weights");
      });
    }
}

struct ExpertCase {
  int64_t n, n_expert, k, d, inter;
  DType wd;
};

TEST(OpsCpu, MoeExperts) {
  OpEnv env;
  const ExpertCase cases[] = {
      {1, 8, 1, 64, 32, DType::kF32},     {1, 8, 2, 17, 33, DType::kBF16},   {3, 128, 8, 256, 96, DType::kBF16},
      {7, 8, 2, 64, 48, DType::kBF16},    {33, 8, 2, 64, 48, DType::kF32},   {33, 128, 8, 64, 32, DType::kBF16},
      {33, 8, 8, 100, 40, DType::kBF16},
  };
  for (const ExpertCase& c : cases) {
    Tensor x = make_tensor(DType::kF32, {c.n, c.d}), ids = make_tensor(DType::kI32, {c.n, c.k});
    Tensor weights = make_tensor(DType::kF32, {c.n, c.k});
    Tensor gate_up = make_tensor(c.wd, {c.n_expert, 2 * c.inter, c.d}), down = make_tensor(c.wd, {c.n_expert, c.d, c.inter});
    fill_normal(x, 110), fill_normal(weights, 111, 0.3), fill_normal(gate_up, 112, 0.2), fill_normal(down, 113, 0.2);
    std::mt19937 rng(114);
    std::vector<int> experts(static_cast<size_t>(c.n_expert));
    std::iota(experts.begin(), experts.end(), 0);
    for (int64_t t = 0; t < c.n; ++t) {
      std::shuffle(experts.begin(), experts.end(), rng);  // k distinct experts per token
      for (int64_t j = 0; j < c.k; ++j) set_value(ids, t * c.k + j, experts[j]);
    }
    Tensor ws_ref = make_tensor(DType::kU8, {static_cast<int64_t>(env.ref.moe_workspace_bytes(c.n, c.k, c.d, c.inter))});
    Tensor ws_cpu = make_tensor(DType::kU8, {static_cast<int64_t>(env.cpu.moe_workspace_bytes(c.n, c.k, c.d, c.inter))});
    Tensor want = make_tensor(DType::kF64, {c.n, c.d}), got = make_tensor(DType::kF32, {c.n, c.d});
    ASSERT_TRUE(env.ref.moe_experts(x, ids, weights, gate_up, down, want, ws_ref, env.ref_stream).ok());
    for_each_isa([&](const std::string& isa) {
      ASSERT_TRUE(env.cpu.moe_experts(x, ids, weights, gate_up, down, got, ws_cpu, env.cpu_stream).ok());
      expect_close(got, want, 1e-9,
                   "moe_experts n=" + std::to_string(c.n) + " E=" + std::to_string(c.n_expert) + " k=" +
                       std::to_string(c.k) + " d=" + std::to_string(c.d) + " inter=" + std::to_string(c.inter) +
                       " " + dtype_name(c.wd) + isa);
    });
  }
}

}  // namespace
}  // namespace ft::test
