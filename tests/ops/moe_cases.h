// MoE routing and expert problems shared by the cpu and cuda op tests: random router logits (with a correction
// bias for the DeepSeek-style cases) and random experts with k distinct experts per token, each with the ref op's
// float64 answer.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/check.h"
#include "op_harness.h"

namespace ft::test {

struct RouteCase {
  int64_t n_expert, k, n_group, topk_group;
  RouterScoring scoring;
  bool bias, norm;
  float scale;
};

// Softmax (Qwen3-MoE) and sigmoid with a correction bias and grouped top-k (DeepSeek-V3), renormalised or not.
inline constexpr RouteCase kRouteCases[] = {
    {8, 1, 1, 1, RouterScoring::kSoftmax, false, false, 1.0f},
    {8, 2, 1, 1, RouterScoring::kSoftmax, false, true, 1.0f},
    {128, 8, 1, 1, RouterScoring::kSoftmax, false, true, 1.0f},
    {128, 8, 1, 1, RouterScoring::kSigmoid, true, true, 2.5f},
    {64, 8, 8, 4, RouterScoring::kSigmoid, true, true, 2.5f},
    {128, 8, 8, 3, RouterScoring::kSigmoid, true, false, 1.0f},
    {32, 4, 4, 2, RouterScoring::kSoftmax, true, true, 1.5f},
    {256, 8, 8, 4, RouterScoring::kSigmoid, true, true, 2.5f},
    // No bias, so that the tied variants tie the selection too: sigmoid scores, and the grouped path.
    {128, 8, 1, 1, RouterScoring::kSigmoid, false, true, 1.0f},
    {64, 6, 4, 2, RouterScoring::kSoftmax, false, true, 1.0f},
};

struct RouteProblem {
  Tensor logits, bias;     // [n, n_expert] f32; [n_expert] f32 or undefined
  MoeRouteParams params;
  Tensor ids_want, w_want;  // [n, k] i32 and f64 from the ref op
  std::string label;
};

// tied: the logits rounded to multiples of 0.5, so that many scores tie (a tie goes to the lower expert id).
inline RouteProblem make_route_problem(const OpTable& ref, Stream& ref_stream, const RouteCase& c, int64_t n,
                                       bool tied = false) {
  RouteProblem r;
  r.logits = make_tensor(DType::kF32, {n, c.n_expert});
  fill_normal(r.logits, 100 + static_cast<uint64_t>(c.n_expert + n), 2.0);
  if (tied)
    for (int64_t i = 0; i < r.logits.numel(); ++i)
      r.logits.ptr<float>()[i] = std::round(2.0f * r.logits.ptr<float>()[i]) / 2.0f;
  if (c.bias) {
    r.bias = make_tensor(DType::kF32, {c.n_expert});
    fill_normal(r.bias, 101, 0.5);
  }
  r.params = MoeRouteParams{c.scoring, c.k, c.n_group, c.topk_group, c.norm, c.scale};
  r.ids_want = make_tensor(DType::kI32, {n, c.k});
  r.w_want = make_tensor(DType::kF64, {n, c.k});
  FT_CHECK(ref.moe_route(r.logits, r.bias, r.ids_want, r.w_want, r.params, ref_stream).ok());
  r.label = "moe_route E=" + std::to_string(c.n_expert) + " k=" + std::to_string(c.k) + " groups " +
            std::to_string(c.n_group) + "/" + std::to_string(c.topk_group) +
            (c.scoring == RouterScoring::kSigmoid ? " sigmoid" : " softmax") + " n=" + std::to_string(n) +
            (tied ? " tied" : "");
  return r;
}

struct ExpertCase {
  int64_t n, n_expert, k, d, inter;
  DType wd;              // f32, bf16, or f4_e2m1: MXFP4 experts (d and inter multiples of 32)
  bool gpt_oss = false;  // gpt-oss's experts: biases and the clamped SwiGLU
  bool interleaved = false;  // gate and up rows alternating (MoeExpertParams::gate_up_interleaved)
};

struct ExpertProblem {
  Tensor x, ids, weights, gate_up, down;  // x [n, d] act; ids, weights [n, k]; experts in the case's dtype
  MoeExpertParams params;  // gpt-oss cases: the clamped activation, biases in the experts' dtype (bf16 beside MXFP4);
                           // MXFP4 cases: the scales
  Tensor want;             // [n, d] f64 from the ref op
  std::string label;
};

// MXFP4 weights [n_expert, rows, cols]: every code byte uniform (all 16 codes, both signs of zero), and their scales
// [n_expert, rows, cols / 32], 2^-6 .. 2^-1 (codes 121-126), so that the weights are about the size of the other
// cases' (normal, 0.2).
inline Tensor make_mxfp4_scales(const Tensor& w, uint64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  auto* codes = static_cast<uint8_t*>(w.data());
  for (size_t i = 0; i < w.nbytes(); ++i) codes[i] = static_cast<uint8_t>(rng());
  Tensor scales = make_tensor(DType::kUE8M0, {w.dim(0), w.dim(1), w.dim(2) / 32});
  auto* s = static_cast<uint8_t*>(scales.data());
  for (size_t i = 0; i < scales.nbytes(); ++i) s[i] = static_cast<uint8_t>(121 + rng() % 6);
  return scales;
}

inline ExpertProblem make_expert_problem(const OpTable& ref, Stream& ref_stream, const ExpertCase& c, DType act) {
  ExpertProblem e;
  e.x = make_tensor(act, {c.n, c.d});
  e.ids = make_tensor(DType::kI32, {c.n, c.k});
  e.weights = make_tensor(DType::kF32, {c.n, c.k});
  e.gate_up = make_tensor(c.wd, {c.n_expert, 2 * c.inter, c.d});
  e.down = make_tensor(c.wd, {c.n_expert, c.d, c.inter});
  fill_normal(e.x, 110), fill_normal(e.weights, 111, 0.3);
  if (c.wd == DType::kF4E2M1) {
    e.params.gate_up_scales = make_mxfp4_scales(e.gate_up, 112);
    e.params.down_scales = make_mxfp4_scales(e.down, 113);
  } else {
    fill_normal(e.gate_up, 112, 0.2), fill_normal(e.down, 113, 0.2);
  }
  std::mt19937 rng(114);
  std::vector<int> experts(static_cast<size_t>(c.n_expert));
  std::iota(experts.begin(), experts.end(), 0);
  for (int64_t t = 0; t < c.n; ++t) {
    std::shuffle(experts.begin(), experts.end(), rng);  // k distinct experts per token
    for (int64_t j = 0; j < c.k; ++j) set_value(e.ids, t * c.k + j, experts[static_cast<size_t>(j)]);
  }
  if (c.gpt_oss) {  // biases wide enough that gate and up often pass the clamp's limit of 7
    e.params.act.kind = ExpertActivation::kClampedSwiglu;
    const DType bias_dtype = c.wd == DType::kF4E2M1 ? DType::kBF16 : c.wd;
    e.params.gate_up_bias = make_tensor(bias_dtype, {c.n_expert, 2 * c.inter});
    e.params.down_bias = make_tensor(bias_dtype, {c.n_expert, c.d});
    fill_normal(e.params.gate_up_bias, 115, 6.0), fill_normal(e.params.down_bias, 116, 1.0);
  }
  e.params.gate_up_interleaved = c.interleaved;
  Tensor ws = make_tensor(DType::kU8, {static_cast<int64_t>(ref.moe_workspace_bytes(c.n, c.k, c.d, c.inter))});
  e.want = make_tensor(DType::kF64, {c.n, c.d});
  FT_CHECK(ref.moe_experts(e.x, e.ids, e.weights, e.gate_up, e.down, e.want, ws, e.params, ref_stream).ok());
  e.label = std::string("moe_experts x ") + dtype_name(act) + " n=" + std::to_string(c.n) +
            " E=" + std::to_string(c.n_expert) + " k=" + std::to_string(c.k) + " d=" + std::to_string(c.d) +
            " inter=" + std::to_string(c.inter) + " " + dtype_name(c.wd) + (c.gpt_oss ? " gpt-oss" : "") +
            (c.interleaved ? " interleaved" : "");
  return e;
}

}  // namespace ft::test
