// Reference MoE routing (softmax/sigmoid, correction bias, grouped top-k) and expert FFN.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backend/ref/ref_access.h"
#include "backend/ref/ref_ops.h"

namespace ft::ref {
namespace {

// Indices of the k largest values, largest first; ties go to the lower index.
std::vector<int64_t> top_k(const std::vector<double>& v, int64_t k) {
  std::vector<int64_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return v[a] > v[b]; });
  idx.resize(static_cast<size_t>(k));
  return idx;
}

}  // namespace

Status moe_route(const Tensor& logits, const Tensor& bias, const Tensor& ids, const Tensor& weights,
                 const MoeRouteParams& p, Stream&) {
  const int64_t n = logits.dim(0), n_expert = logits.dim(1), k = p.n_expert_used;
  if (k < 1 || k > n_expert || ids.dim(1) != k || weights.dim(1) != k || p.n_group < 1 ||
      n_expert % p.n_group || p.topk_group > p.n_group)
    return invalid_argument("moe_route: bad parameters");
  const int64_t per_group = n_expert / p.n_group;
  std::vector<double> score(static_cast<size_t>(n_expert)), choice(static_cast<size_t>(n_expert));
  for (int64_t t = 0; t < n; ++t) {
    double mx = -INFINITY, sum = 0;
    for (int64_t e = 0; e < n_expert; ++e) mx = std::max(mx, score[e] = get(logits, t, e));
    for (int64_t e = 0; e < n_expert; ++e) {
      if (p.scoring == RouterScoring::kSoftmax) sum += (score[e] = std::exp(score[e] - mx));
      else score[e] = 1.0 / (1.0 + std::exp(-score[e]));
    }
    for (int64_t e = 0; e < n_expert; ++e) {
      if (p.scoring == RouterScoring::kSoftmax) score[e] /= sum;
      choice[e] = score[e] + (bias.defined() ? get(bias, e) : 0.0);
    }
    if (p.n_group > 1) {
      std::vector<double> group_score(static_cast<size_t>(p.n_group));
      for (int64_t g = 0; g < p.n_group; ++g) {
        std::vector<double> members(choice.begin() + g * per_group, choice.begin() + (g + 1) * per_group);
        auto best = top_k(members, std::min<int64_t>(2, per_group));
        for (int64_t b : best) group_score[g] += members[b];
      }
      auto keep = top_k(group_score, p.topk_group);
      for (int64_t g = 0; g < p.n_group; ++g)
        if (std::find(keep.begin(), keep.end(), g) == keep.end())
          for (int64_t e = g * per_group; e < (g + 1) * per_group; ++e) choice[e] = 0.0;  // as transformers
    }
    auto chosen = top_k(choice, k);
    double wsum = 0;
    for (int64_t j = 0; j < k; ++j) wsum += score[chosen[j]];
    if (p.scoring == RouterScoring::kSigmoid) wsum += 1e-20;
    for (int64_t j = 0; j < k; ++j) {
      double w = score[chosen[j]];
      if (p.norm_topk) w /= wsum;
      set(ids, static_cast<double>(chosen[j]), t, j);
      set(weights, w * p.scale, t, j);
    }
  }
  return ok_status();
}

size_t moe_workspace_bytes(int64_t, int64_t, int64_t d, int64_t inter) {
  return static_cast<size_t>(inter + d) * sizeof(double);
}

namespace {

// The activation in float64 (ExpertActivation's formulas).
double activation(const ExpertActivation& a, double g, double u) {
  if (a.kind == ExpertActivation::kSwiglu) return g / (1.0 + std::exp(-g)) * u;
  g = std::min(g, static_cast<double>(a.limit));
  u = std::clamp(u, -static_cast<double>(a.limit), static_cast<double>(a.limit));
  return (u + 1.0) * (g / (1.0 + std::exp(-static_cast<double>(a.alpha) * g)));
}

double bias_at(const Tensor& bias, int64_t e, int64_t i) { return bias.defined() ? get(bias, e, i) : 0.0; }

// Weight (e, r, c) of an expert matrix; of an MXFP4 one (scales defined), its code's value times its group's scale.
double weight_at(const Tensor& w, const Tensor& scales, int64_t e, int64_t r, int64_t c) {
  const double v = get(w, e, r, c);
  return scales.defined() ? v * get(scales, e, r, c / 32) : v;
}

// MXFP4 weights (f4_e2m1) and only they come with scales [n_expert, rows, cols / 32] ue8m0.
bool scales_fit(const Tensor& w, const Tensor& scales) {
  if (w.dtype != DType::kF4E2M1) return !scales.defined();
  return w.dim(2) % 32 == 0 && scales.defined() && scales.dtype == DType::kUE8M0 && scales.ndim == 3 &&
         scales.dim(0) >= w.dim(0) && scales.dim(1) == w.dim(1) && scales.dim(2) == w.dim(2) / 32;
}

}  // namespace

Status moe_experts(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up, const Tensor& down,
                   const Tensor& out, const Tensor& workspace, const MoeExpertParams& p, Stream&) {
  const int64_t n = x.dim(0), d = x.dim(1), k = ids.dim(1), n_expert = gate_up.dim(0);
  const int64_t inter = down.dim(2);
  if (gate_up.dim(1) != 2 * inter || gate_up.dim(2) != d || down.dim(1) != d)
    return invalid_argument("moe_experts: gate_up " + gate_up.shape_string() + " down " + down.shape_string());
  const auto bias_fits = [&](const Tensor& b, int64_t len) {
    return !b.defined() || (b.ndim == 2 && b.dim(0) >= n_expert && b.dim(1) == len && dtype_is_float(b.dtype));
  };
  if (!bias_fits(p.gate_up_bias, 2 * inter) || !bias_fits(p.down_bias, d))
    return invalid_argument("moe_experts: biases must be [n_expert, 2 inter] and [n_expert, d]");
  if (!scales_fit(gate_up, p.gate_up_scales) || !scales_fit(down, p.down_scales))
    return invalid_argument("moe_experts: MXFP4 weights need their scales [n_expert, rows, cols / 32] ue8m0");
  if (workspace.nbytes() < moe_workspace_bytes(n, k, d, inter)) return invalid_argument("moe_experts: workspace");
  double* h = workspace.ptr<double>();
  double* acc = h + inter;
  for (int64_t t = 0; t < n; ++t) {
    std::fill(acc, acc + d, 0.0);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = get_int(ids, t, j);
      if (e == -1) continue;  // computed elsewhere
      if (e < 0 || e >= n_expert) return invalid_argument("moe_experts: expert id out of range");
      const double w = get(weights, t, j);
      for (int64_t i = 0; i < inter; ++i) {
        const int64_t gate_row = p.gate_up_interleaved ? 2 * i : i,
                      up_row = p.gate_up_interleaved ? 2 * i + 1 : inter + i;
        double g = 0, u = 0;
        for (int64_t c = 0; c < d; ++c) {
          const double xc = get(x, t, c);
          g += weight_at(gate_up, p.gate_up_scales, e, gate_row, c) * xc;
          u += weight_at(gate_up, p.gate_up_scales, e, up_row, c) * xc;
        }
        h[i] = activation(p.act, g + bias_at(p.gate_up_bias, e, gate_row), u + bias_at(p.gate_up_bias, e, up_row));
      }
      for (int64_t r = 0; r < d; ++r) {
        double y = bias_at(p.down_bias, e, r);
        for (int64_t i = 0; i < inter; ++i) y += weight_at(down, p.down_scales, e, r, i) * h[i];
        acc[r] += w * y;
      }
    }
    for (int64_t r = 0; r < d; ++r) set(out, acc[r], t, r);
  }
  return ok_status();
}

}  // namespace ft::ref
