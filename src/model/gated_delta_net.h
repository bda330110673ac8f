// Gated DeltaNet linear attention (Qwen3.5 / Qwen3-Next): fused in_proj (qkv, z, b, a) -> causal conv1d + SiLU
// with a rolling state -> gated delta rule over the per-sequence fp32 state -> RMSNorm gated by SiLU(z) -> out_proj.
#pragma once

#include <string>

#include "kv/state_pool.h"
#include "model/layers.h"

namespace ft {

struct GatedDeltaNet {
  int64_t layer = 0;
  int64_t n_k = 0, n_v = 0, dk = 0, dv = 0;  // key/value heads and head dims
  Linear in_proj;   // [2 n_k dk + n_v dv (qkv) + n_v dv (z) + n_v (b) + n_v (a), d]
  Tensor conv_w;    // [conv_dim, kernel], conv_dim = 2 n_k dk + n_v dv
  Tensor norm_w;    // [dv]: the gated RMSNorm's weight (not zero-centred)
  Linear out_proj;  // [d, n_v dv]
  GatedDeltaParams gates;  // a_log, dt_bias [n_v]
  float norm_eps = 1e-6f;

  static Result<GatedDeltaNet> load(WeightLoader& w, const std::string& prefix, const ModelConfig& c, int64_t layer);
  // What the layer keeps per sequence.
  StateLayerShape state_shape() const;
  // The ops it needs, present in the backend's table.
  static bool supported(const OpTable& ops);
  // out [n, d].
  Status forward(const LayerContext& c, const LayerScratch& s, const LayerInput& in, const Tensor& out) const;

 private:
  int64_t conv_dim() const { return 2 * n_k * dk + n_v * dv; }
};

}  // namespace ft
