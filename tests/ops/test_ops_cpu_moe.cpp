// cpu moe_route and moe_experts against the ref ops. Routing: softmax (Qwen3-MoE) and sigmoid with a
// correction bias and grouped top-k (DeepSeek-V3), renormalised or not, scaled; ids must match exactly and
// weights to NMSE 1e-12 (fp32 scores vs float64). Experts: 8 or 128 experts, k 1/2/8, 1 to 33 tokens (the
// decode and the grouped prefill paths), f32, bf16 and MXFP4 weights; NMSE 1e-9 (two fp32 GEMMs).
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
      {1, 8, 1, 64, 32, DType::kF32},
      {1, 8, 2, 17, 33, DType::kBF16},
      {3, 128, 8, 256, 96, DType::kBF16},
      {7, 8, 2, 64, 48, DType::kBF16},
      {33, 8, 2, 64, 48, DType::kF32},
      {33, 128, 8, 64, 32, DType::kBF16},
      {33, 8, 8, 100, 40, DType::kBF16},
      {1, 8, 2, 64, 32, DType::kBF16, true},
      {9, 16, 4, 72, 40, DType::kF32, true},
      {33, 32, 4, 64, 48, DType::kBF16, true},
      // MXFP4 experts: decode, a prefill batch, gpt-oss's with biases, and a row of 2880 (90 groups: gpt-oss's width).
      {1, 8, 2, 64, 32, DType::kF4E2M1},
      {33, 16, 4, 96, 64, DType::kF4E2M1},
      {5, 8, 4, 64, 96, DType::kF4E2M1, true},
      {2, 4, 2, 2880, 64, DType::kF4E2M1, true},
      // gate and up rows alternating, as gpt-oss's checkpoints store them: MXFP4 read in place, and the plain SwiGLU.
      {5, 8, 4, 64, 96, DType::kF4E2M1, true, true},
      {33, 8, 2, 64, 32, DType::kBF16, false, true},
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

// MXFP4 codes mean nothing without their scales: the op refuses them, and scales of the wrong shape, with an error.
TEST(OpsCpu, MoeExpertsMxfp4NeedsItsScales) {
  OpEnv env;
  const ExpertCase c{1, 8, 2, 64, 32, DType::kF4E2M1};
  const ExpertProblem e = make_expert_problem(env.ref, env.ref_stream, c, DType::kF32);
  Tensor ws = make_tensor(DType::kU8, {static_cast<int64_t>(env.cpu.moe_workspace_bytes(c.n, c.k, c.d, c.inter))});
  Tensor got = make_tensor(DType::kF32, {c.n, c.d});
  MoeExpertParams without = e.params, narrow = e.params;
  without.down_scales = Tensor{};
  narrow.gate_up_scales = make_tensor(DType::kUE8M0, {c.n_expert, 2 * c.inter, c.d / 64});
  for (const MoeExpertParams& p : {without, narrow}) {
    const Status st = env.cpu.moe_experts(e.x, e.ids, e.weights, e.gate_up, e.down, got, ws, p, env.cpu_stream);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("scales"), std::string::npos) << st.to_string();
  }
}

}  // namespace
}  // namespace ft::test
