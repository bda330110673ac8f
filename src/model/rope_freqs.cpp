// Rope inverse frequencies: default, linear and YaRN scaling (others are reported unsupported by name), every step
// in float32 where transformers' modeling_rope_utils takes it in float32.
#include "model/rope_freqs.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ft {
namespace {

// YaRN (transformers' _compute_yarn_parameters): each frequency blends the plain one (extrapolation) and the one
// divided by factor (interpolation) by a ramp over the dims whose wavelengths the original context holds between
// beta_slow and beta_fast rotations; cos and sin are scaled by attention_factor.
Status apply_yarn(const RopeConfig& rope, int64_t rot_dim, int64_t max_position_embeddings, RopeTable& t) {
  // transformers 5 defaults the original context to max_position_embeddings and takes the factor as given.
  const double original = rope.original_max_position_embeddings > 0 ? rope.original_max_position_embeddings
                                                                    : static_cast<double>(max_position_embeddings);
  const double factor = rope.factor;
  if (!(factor > 0) || !(original > 0)) return invalid_argument("rope: yarn needs a positive factor and context");
  if (rope.attention_factor > 0)
    t.attention_factor = static_cast<float>(rope.attention_factor);
  else if (rope.mscale != 0 && rope.mscale_all_dim != 0)
    t.attention_factor =
        static_cast<float>(yarn_mscale(factor, rope.mscale) / yarn_mscale(factor, rope.mscale_all_dim));
  else
    t.attention_factor = static_cast<float>(yarn_mscale(factor, 1.0));

  const double dim = static_cast<double>(rot_dim), base = rope.theta;
  const auto correction_dim = [&](double rotations) {
    return dim * std::log(original / (rotations * 2 * std::numbers::pi)) / (2 * std::log(base));
  };
  double low = correction_dim(rope.beta_fast > 0 ? rope.beta_fast : 32.0);
  double high = correction_dim(rope.beta_slow > 0 ? rope.beta_slow : 1.0);
  if (rope.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0), high = std::min(high, dim - 1);
  if (low == high) high += 0.001;  // transformers' guard against a zero-width ramp
  const float low_f = static_cast<float>(low), width_f = static_cast<float>(high - low);
  const float factor_f = static_cast<float>(factor), base_f = static_cast<float>(base);
  for (size_t i = 0; i < t.inv_freq.size(); ++i) {
    const float pos_freq = std::pow(base_f, static_cast<float>(2 * i) / static_cast<float>(rot_dim));
    const float extrapolation = 1.0f / pos_freq;
    const float interpolation = 1.0f / (factor_f * pos_freq);
    const float ramp = std::clamp((static_cast<float>(i) - low_f) / width_f, 0.0f, 1.0f);
    const float keep = 1.0f - ramp;  // the share of the extrapolated frequency
    t.inv_freq[i] = interpolation * (1.0f - keep) + extrapolation * keep;
  }
  return ok_status();
}

}  // namespace

double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

Result<RopeTable> rope_table(const RopeConfig& rope, int64_t rot_dim, int64_t max_position_embeddings) {
  if (rot_dim <= 0 || rot_dim % 2) return invalid_argument("rope: rotary dimension " + std::to_string(rot_dim));
  RopeTable t;
  t.rot_dim = rot_dim;
  const float base = static_cast<float>(rope.theta);
  for (int64_t i = 0; i < rot_dim; i += 2) {
    // transformers: 1.0 / (base ** (arange(0, dim, 2).float() / dim)), every step in float32.
    const float exponent = static_cast<float>(i) / static_cast<float>(rot_dim);
    t.inv_freq.push_back(1.0f / std::pow(base, exponent));
  }
  if (rope.type == "default") return t;
  if (rope.type == "linear") {
    for (float& f : t.inv_freq) f /= static_cast<float>(rope.factor);
    return t;
  }
  if (rope.type == "yarn") {
    FT_RETURN_IF_ERROR(apply_yarn(rope, rot_dim, max_position_embeddings, t));
    return t;
  }
  return unsupported("rope type '" + rope.type + "' is not supported yet");
}

}  // namespace ft
