// Reference sample: the host sampler's rules (logits sorted descending, top-k, top-p, min-p, a draw in id order)
// in float64.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backend/ref/ref_access.h"
#include "backend/ref/ref_ops.h"

namespace ft::ref {

Status sample(const Tensor& logits,   // [n, vocab] f32
              const Tensor& params,   // [n, 5] f32: temperature, top_k, top_p, min_p, u
              const Tensor& ids,      // [n] i32
              const Tensor& logprobs, // [n, 1 + n_top] f32
              const Tensor& top_ids,  // [n, n_top] i32 or undefined
              Stream&) {
  const int64_t n = logits.ndim == 2 ? logits.dim(0) : -1;
  if (n < 0 || params.ndim != 2 || params.dim(0) != n || params.dim(1) != 5 || ids.numel() != n ||
      logprobs.ndim != 2 || logprobs.dim(0) != n || logprobs.dim(1) < 1 ||
      (logprobs.dim(1) > 1 && (top_ids.ndim != 2 || top_ids.dim(0) != n || top_ids.dim(1) != logprobs.dim(1) - 1)))
    return invalid_argument("sample: logits, params, ids, logprobs and top_ids do not match");
  const int64_t v = logits.dim(1), n_top = std::min(logprobs.dim(1) - 1, v);
  std::vector<double> l(static_cast<size_t>(v)), prob(static_cast<size_t>(v));
  std::vector<int64_t> order(static_cast<size_t>(v));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t i = 0; i < v; ++i) l[static_cast<size_t>(i)] = get(logits, r, i);
    const double t = get(params, r, 0), top_k = get(params, r, 1), top_p = get(params, r, 2);
    const double min_p = get(params, r, 3), u = get(params, r, 4);
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return l[a] > l[b]; });
    const double mx = l[static_cast<size_t>(order[0])];
    double sum = 0;
    for (double x : l) sum += std::exp(x - mx);
    const double lse = mx + std::log(sum);
    int64_t chosen = order[0];
    if (t > 0 && top_k != 1) {
      std::fill(prob.begin(), prob.end(), 0.0);
      int64_t keep = top_k > 0 ? std::min<int64_t>(v, static_cast<int64_t>(top_k)) : v;
      double z = 0;
      for (int64_t i = 0; i < keep; ++i) z += (prob[order[i]] = std::exp((l[order[i]] - mx) / t));
      for (int64_t i = 0; i < keep; ++i) prob[order[i]] /= z;
      if (top_p < 1) {  // the smallest prefix whose mass reaches top_p
        double cum = 0;
        int64_t k = 0;
        while (k < keep) {
          cum += prob[order[k++]];
          if (cum >= top_p) break;
        }
        for (int64_t i = k; i < keep; ++i) prob[order[i]] = 0;
        keep = k;
      }
      const double floor = min_p * prob[order[0]];
      z = 0;
      for (int64_t i = 0; i < keep; ++i) {
        if (prob[order[i]] < floor) prob[order[i]] = 0;
        z += prob[order[i]];
      }
      double cum = 0;
      for (int64_t i = 0; i < v; ++i) {
        if (prob[i] <= 0) continue;
        chosen = i;
        cum += prob[i] / z;
        if (u < cum) break;
      }
    }
    set(ids, static_cast<double>(chosen), r);
    set(logprobs, l[static_cast<size_t>(chosen)] - lse, r, 0);
    for (int64_t j = 0; j < n_top; ++j) {
      set(top_ids, static_cast<double>(order[j]), r, j);
      set(logprobs, l[static_cast<size_t>(order[j])] - lse, r, 1 + j);
    }
  }
  return ok_status();
}

}  // namespace ft::ref
