// ProfilingBackend: a wrapper op table whose entries mark the stream, label the op, then run the real op.
#include "cli/op_profiler.h"

namespace ft::cli {
namespace {

ProfilingBackend* g_active = nullptr;  // the profiler the wrapper table reports to

std::string dims(const Tensor& t) {
  std::string s;
  for (int i = 0; i < t.ndim; ++i) {
    if (i) s.push_back('x');
    s.append(std::to_string(t.shape[i]));
  }
  return s;
}

const OpTable& inner() { return g_active->inner_ops(); }

Status embedding(const Tensor& table, const Tensor& ids, const Tensor& out, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("embedding"));
  return inner().embedding(table, ids, out, s);
}
Status matmul(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("matmul w " + dims(w)));
  return inner().matmul(x, w, bias, out, s);
}
Status rms_norm(const Tensor& x, const Tensor& w, const Tensor& out, const RmsNormParams& p, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("rms_norm " + dims(x)));
  return inner().rms_norm(x, w, out, p, s);
}
Status rope(const Tensor& x, const Tensor& pos, const Tensor& f, const Tensor& out, const RopeParams& p, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("rope"));
  return inner().rope(x, pos, f, out, p, s);
}
Status add_rms_norm_matmul(const Tensor& x, const Tensor& delta, const Tensor& w, const Tensor& x_out, const Tensor& h,
                           const Tensor& proj, const Tensor& bias, const Tensor& out, const RmsNormParams& p,
                           Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("add_rms_norm_matmul w " + dims(proj)));
  return inner().add_rms_norm_matmul(x, delta, w, x_out, h, proj, bias, out, p, s);
}
Status qk_norm_rope_store(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_w, const Tensor& k_w,
                          const Tensor& pos, const Tensor& f, const Tensor& slots, const Tensor& kc, const Tensor& vc,
                          const RmsNormParams& norm, const RopeParams& rope_p, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("qk_norm_rope_store"));
  return inner().qk_norm_rope_store(q, k, v, q_w, k_w, pos, f, slots, kc, vc, norm, rope_p, s);
}
Status matmul_heads(const Tensor& x, const Tensor& w, const Tensor& out, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("matmul_heads w " + dims(w)));
  return inner().matmul_heads(x, w, out, s);
}
Status mla_latent_store(const Tensor& keys, const Tensor& w, const Tensor& q_rope, const Tensor& q_out,
                        const Tensor& pos, const Tensor& f, const Tensor& slots, const Tensor& kc,
                        const RmsNormParams& norm, const RopeParams& rope_p, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("mla_latent_store"));
  return inner().mla_latent_store(keys, w, q_rope, q_out, pos, f, slots, kc, norm, rope_p, s);
}
Status swiglu(const Tensor& gate, const Tensor& up, const Tensor& out, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("swiglu"));
  return inner().swiglu(gate, up, out, s);
}
Status softmax(const Tensor& x, const Tensor& out, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("softmax"));
  return inner().softmax(x, out, s);
}
Status add(const Tensor& a, const Tensor& b, const Tensor& out, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("add"));
  return inner().add(a, b, out, s);
}
Status convert(const Tensor& x, const Tensor& out, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("convert"));
  return inner().convert(x, out, s);
}
Status kv_store(const Tensor& k, const Tensor& v, const Tensor& slots, const Tensor& kc, const Tensor& vc, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("kv_store"));
  return inner().kv_store(k, v, slots, kc, vc, s);
}
Status attention(const Tensor& q, const Tensor& kc, const Tensor& vc, const PagedAttentionMeta& m, const Tensor& out,
                 const AttentionParams& p, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("attention"));
  return inner().attention(q, kc, vc, m, out, p, s);
}
Status moe_route(const Tensor& logits, const Tensor& bias, const Tensor& ids, const Tensor& w, const MoeRouteParams& p,
                 Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("moe_route"));
  return inner().moe_route(logits, bias, ids, w, p, s);
}
Status moe_experts(const Tensor& x, const Tensor& ids, const Tensor& w, const Tensor& gate_up, const Tensor& down,
                   const Tensor& out, const Tensor& ws, const MoeExpertParams& p, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("moe_experts"));
  return inner().moe_experts(x, ids, w, gate_up, down, out, ws, p, s);
}
Status moe_cache_lookup(const Tensor& ids, const ExpertCacheTables& t, const Tensor& slot_ids, const Tensor& cpu_ids,
                        const Tensor& fills, const MoeCacheLookupParams& p, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("moe_cache_lookup"));
  return inner().moe_cache_lookup(ids, t, slot_ids, cpu_ids, fills, p, s);
}
Status moe_cache_fill(const Tensor& src, const Tensor& dst, const Tensor& fills, const Tensor& key_of,
                      const Tensor& timing, Stream& s) {
  FT_RETURN_IF_ERROR(g_active->before("moe_cache_fill (PCIe)"));
  return inner().moe_cache_fill(src, dst, fills, key_of, timing, s);
}
bool supports(Op op, DType act, DType weight) { return inner().supports(op, act, weight); }
size_t moe_workspace_bytes(int64_t n, int64_t k, int64_t d, int64_t inter) {
  return inner().moe_workspace_bytes(n, k, d, inter);
}

// The inner table with the ops above wrapped; ops without a wrapper are called directly.
OpTable profiling_table(const OpTable& inner_table) {
  OpTable t = inner_table;
  t.name = "profiling";
  t.supports = supports;
  t.embedding = embedding;
  t.matmul = matmul;
  t.rms_norm = rms_norm;
  t.rope = rope;
  t.add_rms_norm_matmul = add_rms_norm_matmul;
  t.qk_norm_rope_store = qk_norm_rope_store;
  t.swiglu = swiglu;
  t.softmax = softmax;
  t.add = add;
  t.convert = convert;
  t.kv_store = kv_store;
  t.attention = attention;
  t.moe_route = moe_route;
  t.moe_experts = moe_experts;
  t.moe_workspace_bytes = moe_workspace_bytes;
  t.moe_cache_lookup = moe_cache_lookup;
  t.moe_cache_fill = moe_cache_fill;
  t.matmul_heads = matmul_heads;
  t.mla_latent_store = mla_latent_store;
  return t;
}

}  // namespace

ProfilingBackend::~ProfilingBackend() {
  if (g_active == this) g_active = nullptr;
}

const OpTable& ProfilingBackend::ops() const { return active_ ? table_ : inner_->ops(); }

Status ProfilingBackend::start() {
  if (g_active != nullptr && g_active != this) return invalid_argument("another profiler is active");
  if (!timer_) {
    FT_ASSIGN_OR_RETURN(timer_, inner_->timer());
  }
  table_ = profiling_table(inner_->ops());
  g_active = this;
  active_ = true;
  labels_.clear();
  return ok_status();
}

Status ProfilingBackend::before(std::string label) {
  labels_.push_back(std::move(label));
  return timer_->mark();
}

Result<std::vector<std::pair<std::string, double>>> ProfilingBackend::stop() {
  active_ = false;
  g_active = nullptr;
  FT_RETURN_IF_ERROR(timer_->mark());
  FT_ASSIGN_OR_RETURN(std::vector<double> ms, timer_->intervals_ms());
  std::vector<std::pair<std::string, double>> out;
  for (size_t i = 0; i < labels_.size() && i < ms.size(); ++i) out.emplace_back(labels_[i], ms[i]);
  return out;
}

}  // namespace ft::cli
