// cpu moe_route and moe_experts against the ref ops. Routing: softmax (Qwen3-MoE) and sigmoid with a
// correction bias and grouped top-k (DeepSeek-V3), renormalised or not, scaled; ids must match exactly and
// weights to NMSE 1e-12 (fp32 scores vs float64). Experts: 8 or 128 experts, k 1/2/8, 1 to 33 tokens (the
// decode and the grouped prefill paths), f32 and bf16 weights; NMSE 1e-9 (two fp32 GEMMs).
#include <gtest/gtest.h>

#include <string>

#include "moe_cases.h"
#include "op_harness.h"

namespace ft::test {
namespace {

TEST(OpsCpu, MoeRoute) {
  OpEnv env;
  for (const RouteCase& c : kRouteCases)
    for (int64_t n : {1, 7, 33})
      for (bool tied : {false, true}) {
        const RouteProblem r = make_route_problem(env.ref, env.ref_stream, c, n, tied);
        Tensor ids_got = make_tensor(DType::kI32, {n, c.k}), w_got = make_tensor(DType::kF32, {n, c.k});
        for_each_isa([&](const std::string& isa) {
          ASSERT_TRUE(env.cpu.moe_route(r.logits, r.bias, ids_got, w_got, r.params, env.cpu_stream).ok());
          expect_equal_ints(ids_got, r.ids_want, r.label + isa + " ids");
          expect_close(w_got, r.w_want, 1e-12, r.label + isa + " weights");
        });
      }
}

TEST(OpsCpu, MoeExperts) {
  OpEnv env;
  const ExpertCase cases[] = {
      {1, 8, 1, 64, 32, DType::kF32},        {1, 8, 2, 17, 33, DType::kBF16},
      {3, 128, 8, 256, 96, DType::kBF16},    {7, 8, 2, 64, 48, DType::kBF16},
      {33, 8, 2, 64, 48, DType::kF32},       {33, 128, 8, 64, 32, DType::kBF16},
      {33, 8, 8, 100, 40, DType::kBF16},     {1, 8, 2, 64, 32, DType::kBF16, true},
      {9, 16, 4, 72, 40, DType::kF32, true}, {33, 32, 4, 64, 48, DType::kBF16, true},
  };
  for (const ExpertCase& c : cases) {
    const ExpertProblem e = make_expert_problem(env.ref, env.ref_stream, c, DType::kF32);
    Tensor ws = make_tensor(DType::kU8, {static_cast<int64_t>(env.cpu.moe_workspace_bytes(c.n, c.k, c.d, c.inter))});
    Tensor got = make_tensor(DType::kF32, {c.n, c.d});
    for_each_isa([&](const std::string& isa) {
      ASSERT_TRUE(
          env.cpu.moe_experts(e.x, e.ids, e.weights, e.gate_up, e.down, got, ws, e.params, env.cpu_stream).ok());
      expect_close(got, e.want, 1e-9, e.label + isa);
    });
  }
}

}  // namespace
}  // namespace ft::test
