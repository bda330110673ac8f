// moe_route: softmax or sigmoid router scores in fp32, optional correction bias for selection only, grouped
// top-k (DeepSeek), renormalisation and scaling; as transformers' modeling_qwen3_moe (softmax) and
// modeling_deepseek_v3 (sigmoid). Ids come out by descending selection score, ties to the lowest index.
#include <algorithm>
#include <cmath>

#include "backend/cpu/common.h"
#include "backend/cpu/cpu_ops.h"

namespace ft::cpu {
namespace {

constexpr int64_t kMaxExperts = 1024;  // stack limit of per-token scores
constexpr int64_t kMaxGroups = 64;

// Index of the largest v[i] with !taken[i] over [0, n); ties to the lowest index.
int64_t arg_max(const float* v, const bool* taken, int64_t n) {
  int64_t best = -1;
  for (int64_t i = 0; i < n; ++i)
    if (!taken[i] && (best < 0 || v[i] > v[best])) best = i;
  return best;
}

}  // namespace

Status moe_route(const Tensor& logits,   // [n, n_expert] f32
                 const Tensor& bias,     // [n_expert] f32 or undefined
                 const Tensor& ids,      // [n, k] i32
                 const Tensor& weights,  // [n, k] f32
                 const MoeRouteParams& p, Stream& s) {
  if (logits.dtype != DType::kF32) return dtype_error("moe_route", "logits", logits);
  if (bias.defined() && bias.dtype != DType::kF32) return dtype_error("moe_route", "bias", bias);
  if (ids.dtype != DType::kI32 || weights.dtype != DType::kF32) return dtype_error("moe_route", "ids/weights", ids);
  const int64_t n = logits.n_rows(), n_expert = logits.dim(-1), k = p.n_expert_used;
  const int64_t group_size = p.n_group > 0 ? n_expert / p.n_group : 0;
  if (n_expert > kMaxExperts || k < 1 || k > n_expert || ids.n_rows() != n || ids.dim(-1) != k ||
      !same_shape(ids, weights) || (bias.defined() && bias.numel() != n_expert))
    return shape_error("moe_route", "logits, bias, ids and weights do not match");
  if (p.n_group < 1 || p.n_group > kMaxGroups || n_expert % p.n_group != 0 || p.topk_group < 1 ||
      p.topk_group > p.n_group || (p.n_group > 1 && (group_size < 2 || k > p.topk_group * group_size)))
    return shape_error("moe_route", "bad grouping");
  const float* b = bias.defined() ? bias.ptr<const float>() : nullptr;

  parallel_for(s, n, 16, [&](int, int64_t t0, int64_t t1) {
    float score[kMaxExperts], choice[kMaxExperts];
    bool taken[kMaxExperts];
    for (int64_t t = t0; t < t1; ++t) {
      const float* lg = row_ptr<const float>(logits, t);
      if (p.scoring == RouterScoring::kSoftmax) {
        const float mx = *std::max_element(lg, lg + n_expert);
        float sum = 0.0f;
        for (int64_t e = 0; e < n_expert; ++e) sum += score[e] = std::exp(lg[e] - mx);
        for (int64_t e = 0; e < n_expert; ++e) score[e] /= sum;
      } else {
        for (int64_t e = 0; e < n_expert; ++e) score[e] = 1.0f / (1.0f + std::exp(-lg[e]));
      }
      for (int64_t e = 0; e < n_expert; ++e) choice[e] = b ? score[e] + b[e] : score[e];
      if (p.n_group > 1) {
        // Group score = sum of its top-2 choice scores; experts outside the topk_group best groups get 0.
        float group_score[kMaxGroups];
        bool group_taken[kMaxGroups] = {};
        for (int64_t gi = 0; gi < p.n_group; ++gi) {
          const float* c = choice + gi * group_size;
          float a = -INFINITY, a2 = -INFINITY;
          for (int64_t e = 0; e < group_size; ++e) {
            if (c[e] > a) {
              a2 = a;
              a = c[e];
            } else if (c[e] > a2) {
              a2 = c[e];
            }
          }
          group_score[gi] = a + a2;
        }
        bool keep[kMaxGroups] = {};
        for (int64_t r = 0; r < p.topk_group; ++r) {
          const int64_t gi = arg_max(group_score, group_taken, p.n_group);
          group_taken[gi] = keep[gi] = true;
        }
        for (int64_t e = 0; e < n_expert; ++e)
          if (!keep[e / group_size]) choice[e] = 0.0f;
      }
      std::fill(taken, taken + n_expert, false);
      int32_t* id = row_ptr<int32_t>(ids, t);
      float* w = row_ptr<float>(weights, t);
      float sum = 0.0f;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t e = arg_max(choice, taken, n_expert);
        taken[e] = true;
        id[j] = static_cast<int32_t>(e);
        w[j] = score[e];
        sum += score[e];
      }
      if (p.norm_topk) {
        const float denom = p.scoring == RouterScoring::kSigmoid ? sum + 1e-20f : sum;
        for (int64_t j = 0; j < k; ++j) w[j] /= denom;
      }
      for (int64_t j = 0; j < k; ++j) w[j] *= p.scale;
    }
  });
  return ok_status();
}

}  // namespace ft::cpu
