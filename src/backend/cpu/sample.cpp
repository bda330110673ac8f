// CPU sample: the op's rules in float with float64 sums; only the top_k (or, without one, all) tokens are sorted,
// and only the n_top most likely for the logprobs.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backend/cpu/common.h"
#include "backend/cpu/cpu_ops.h"

namespace ft::cpu {
namespace {

struct RowParams {
  float temperature, top_k, top_p, min_p, u;
};

// The kept tokens' unnormalised probabilities in `prob` (zero elsewhere); returns their sum.
double filter(const float* l, int64_t v, float mx, const RowParams& p, std::vector<int32_t>& order,
              std::vector<double>& prob) {
  auto by_logit = [&](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); };
  const int64_t keep_k = p.top_k > 0 ? std::min<int64_t>(v, static_cast<int64_t>(p.top_k)) : v;
  std::partial_sort(order.begin(), order.begin() + keep_k, order.end(), by_logit);
  int64_t keep = keep_k;
  double z = 0;
  for (int64_t i = 0; i < keep; ++i) z += (prob[order[i]] = std::exp((static_cast<double>(l[order[i]]) - mx) / p.temperature));
  if (p.top_p < 1) {
    double cum = 0;
    int64_t k = 0;
    while (k < keep) {
      cum += prob[order[k++]];
      if (cum >= p.top_p * z) break;
    }
    keep = k;
  }
  double kept = 0;
  for (int64_t i = 0; i < keep; ++i) {
    double& q = prob[order[i]];
    if (q < p.min_p) q = 0;  // the largest is exp(0) = 1
    kept += q;
  }
  for (int64_t i = keep; i < keep_k; ++i) prob[order[i]] = 0;
  return kept;
}

}  // namespace

Status sample(const Tensor& logits,   // [n, vocab] f32
              const Tensor& params,   // [n, 5] f32: temperature, top_k, top_p, min_p, u
              const Tensor& ids,      // [n] i32
              const Tensor& logprobs, // [n, 1 + n_top] f32
              const Tensor& top_ids,  // [n, n_top] i32 or undefined
              Stream&) {
  const int64_t n = logits.ndim == 2 ? logits.dim(0) : -1;
  if (n < 0 || logits.dtype != DType::kF32 || params.dtype != DType::kF32 || params.ndim != 2 ||
      params.dim(0) != n || params.dim(1) != 5 || ids.dtype != DType::kI32 || ids.numel() != n ||
      logprobs.dtype != DType::kF32 || logprobs.ndim != 2 || logprobs.dim(0) != n || logprobs.dim(1) < 1 ||
      (logprobs.dim(1) > 1 && (top_ids.dtype != DType::kI32 || top_ids.ndim != 2 || top_ids.dim(0) != n ||
                               top_ids.dim(1) != logprobs.dim(1) - 1)) ||
      !logits.is_contiguous() || !params.is_contiguous() || !ids.is_contiguous() || !logprobs.is_contiguous() ||
      (top_ids.defined() && !top_ids.is_contiguous()))
    return invalid_argument("sample: logits, params, ids, logprobs and top_ids do not match");
  const int64_t v = logits.dim(1), n_top = std::min(logprobs.dim(1) - 1, v);
  std::vector<int32_t> order(static_cast<size_t>(v));
  std::vector<double> prob(static_cast<size_t>(v));
  for (int64_t r = 0; r < n; ++r) {
    const float* l = logits.ptr<const float>() + r * v;
    const float* pr = params.ptr<const float>() + r * 5;
    const RowParams p{pr[0], pr[1], pr[2], pr[3], pr[4]};
    const int32_t best = static_cast<int32_t>(std::max_element(l, l + v) - l);
    const float mx = l[best];
    double sum = 0;
    for (int64_t i = 0; i < v; ++i) sum += std::exp(static_cast<double>(l[i]) - mx);
    const double lse = mx + std::log(sum);
    int32_t chosen = best;
    std::iota(order.begin(), order.end(), 0);
    if (p.temperature > 0 && p.top_k != 1) {
      std::fill(prob.begin(), prob.end(), 0.0);
      const double target = p.u * filter(l, v, mx, p, order, prob);
      double cum = 0;
      for (int64_t i = 0; i < v; ++i) {
        if (prob[i] <= 0) continue;
        chosen = static_cast<int32_t>(i);
        cum += prob[i];
        if (target < cum) break;
      }
      std::iota(order.begin(), order.end(), 0);
    }
    ids.ptr<int32_t>()[r] = chosen;
    float* lp = logprobs.ptr<float>() + r * logprobs.dim(1);
    lp[0] = static_cast<float>(l[chosen] - lse);
    std::partial_sort(order.begin(), order.begin() + n_top, order.end(),
                      [&](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
    for (int64_t j = 0; j < n_top; ++j) {
      top_ids.ptr<int32_t>()[r * top_ids.dim(1) + j] = order[j];
      lp[1 + j] = static_cast<float>(l[order[j]] - lse);
    }
  }
  return ok_status();
}

}  // namespace ft::cpu
