// Gated DeltaNet layer: projections, conv, delta rule and gated norm through the op table.
#include "model/gated_delta_net.h"

namespace ft {

Result<GatedDeltaNet> GatedDeltaNet::load(WeightLoader& w, const std::string& prefix, const ModelConfig& c,
                                          int64_t layer) {
  GatedDeltaNet g;
  g.layer = layer;
  g.n_k = c.linear_num_key_heads, g.n_v = c.linear_num_value_heads;
  g.dk = c.linear_key_head_dim, g.dv = c.linear_value_head_dim;
  const int64_t d = c.hidden_size, kernel = c.linear_conv_kernel_dim, value_dim = g.n_v * g.dv;
  if (g.n_k <= 0 || g.n_v % g.n_k != 0 || kernel < 1)
    return invalid_argument("Gated DeltaNet: linear_num_value_heads must be a multiple of linear_num_key_heads");
  FT_ASSIGN_OR_RETURN(g.in_proj.w, w.stack_rows({prefix + ".in_proj_qkv.weight", prefix + ".in_proj_z.weight",
                                                 prefix + ".in_proj_b.weight", prefix + ".in_proj_a.weight"},
                                                {g.conv_dim(), value_dim, g.n_v, g.n_v}, d));
  FT_ASSIGN_OR_RETURN(Tensor conv, w.get(prefix + ".conv1d.weight", {g.conv_dim(), 1, kernel}));
  g.conv_w = conv.reshape({g.conv_dim(), kernel});
  FT_ASSIGN_OR_RETURN(g.norm_w, w.get(prefix + ".norm.weight", {g.dv}));
  FT_ASSIGN_OR_RETURN(g.out_proj.w, w.get(prefix + ".out_proj.weight", {d, value_dim}));
  FT_ASSIGN_OR_RETURN(g.gates.a_log, w.get(prefix + ".A_log", {g.n_v}));
  FT_ASSIGN_OR_RETURN(g.gates.dt_bias, w.get(prefix + ".dt_bias", {g.n_v}));
  g.norm_eps = static_cast<float>(c.rms_norm_eps);
  return g;
}

StateLayerShape GatedDeltaNet::state_shape() const {
  return {conv_dim(), conv_w.dim(1) - 1, n_v, dk, dv};
}

bool GatedDeltaNet::supported(const OpTable& ops) {
  return ops.conv1d_silu && ops.gated_delta_chunked && ops.gated_delta_step && ops.rms_norm_gated &&
         ops.sigmoid_mul;
}

Status GatedDeltaNet::forward(const LayerContext& c, const LayerScratch& s, const LayerInput& in,
                              const Tensor& out) const {
  const int64_t n = in.h.dim(0), key_dim = n_k * dk, value_dim = n_v * dv;
  if (c.step.recurrent.n_seq != c.step.meta.n_seq)
    return invalid_argument("the batch carries no recurrent state slots for a linear-attention layer");
  const Tensor proj = rows(s.linear_proj, n).slice(1, 0, in_proj.w.dim(0));  // [n, qkv | z | b | a]
  FT_RETURN_IF_ERROR(in_proj.forward(c, in, proj));
  const Tensor conv = rows(s.linear_conv, n).slice(1, 0, conv_dim());  // [n, q | k | v]
  const RecurrentMeta& meta = c.step.recurrent;
  FT_RETURN_IF_ERROR(c.ops.conv1d_silu(proj.slice(1, 0, conv_dim()), conv_w, meta, c.kv.states().conv(layer), conv,
                                       c.stream));
  const Tensor q = split_heads(conv.slice(1, 0, key_dim), n_k, dk);
  const Tensor k = split_heads(conv.slice(1, key_dim, key_dim), n_k, dk);
  const Tensor v = split_heads(conv.slice(1, 2 * key_dim, value_dim), n_v, dv);
  const Tensor z = split_heads(proj.slice(1, conv_dim(), value_dim), n_v, dv);
  const Tensor b = proj.slice(1, conv_dim() + value_dim, n_v), a = proj.slice(1, conv_dim() + value_dim + n_v, n_v);
  const Tensor core_rows = rows(s.linear_out, n).slice(1, 0, value_dim);  // [n, n_v dv]
  const Tensor core = split_heads(core_rows, n_v, dv);
  const auto delta_rule = c.step.max_seq_tokens == 1 ? c.ops.gated_delta_step : c.ops.gated_delta_chunked;
  FT_RETURN_IF_ERROR(delta_rule(q, k, v, a, b, meta, c.kv.states().delta(layer), core, gates, c.stream));
  FT_RETURN_IF_ERROR(c.ops.rms_norm_gated(core, norm_w, z, core, norm_eps, c.stream));
  return out_proj.forward(c, core_rows, out);
}

}  // namespace ft
