// CausalLm: shared loading, workspace planning and the step loop around the architecture's layers.
#include "model/causal_lm.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <span>

namespace ft {

Status CausalLm::load_common(WeightLoader& w, const std::string& prefix) {
  const auto& c = config_;
  FT_ASSIGN_OR_RETURN(embed_, w.get(prefix + ".embed_tokens.weight", {c.vocab_size, c.hidden_size}));
  FT_ASSIGN_OR_RETURN(final_norm_, w.get(prefix + ".norm.weight", {c.hidden_size}));
  if (c.tie_word_embeddings && !w.has("lm_head.weight")) {
    lm_head_ = embed_;
  } else {
    FT_ASSIGN_OR_RETURN(lm_head_, w.get("lm_head.weight", {c.vocab_size, c.hidden_size}));
  }
  final_norm_params_.eps = static_cast<float>(c.rms_norm_eps);
  return plan_workspace();
}

namespace {
// The fewest keys a step's page table view holds: one key range of the CUDA decode attention (a narrower view would
// change no launch, only add graphs).
constexpr int64_t kMinKeyCapacity = 64;

// The page table columns a step's attention is given: enough for its longest row (keys), rounded up to a power of
// two and to kMinKeyCapacity keys, at most the table's max_columns. Few widths, so few graphs a batch size.
int64_t key_capacity_columns(int64_t keys, int64_t page_size, int64_t max_columns) {
  const int64_t need = std::max((keys + page_size - 1) / page_size, (kMinKeyCapacity + page_size - 1) / page_size);
  return std::min(max_columns, static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(need))));
}

// Where a step of n tokens and S sequences keeps its inputs in the packed buffer, as i32 offsets (the page table, S
// rows of P, 16-byte aligned): the same for every step of the same n and S, as a captured graph needs.
struct StepLayout {
  int64_t tokens, positions, slots, logit_rows, q_start, kv_len, state_slots, page_table, end;
};
StepLayout step_layout(int64_t n, int64_t S, int64_t P) {
  StepLayout at{};
  at.positions = n, at.slots = 2 * n, at.logit_rows = 3 * n, at.q_start = 4 * n;
  at.kv_len = at.q_start + S + 1, at.state_slots = at.kv_len + S;
  at.page_table = (at.state_slots + S + 3) / 4 * 4;
  at.end = at.page_table + S * P;
  return at;
}
}  // namespace

void CausalLm::plan(Arena& a) {
  const auto& c = config_;
  const int64_t T = options_.max_tokens, S = options_.max_seqs, P = options_.max_pages_per_seq;
  const DType act = options_.act_dtype, hidden = hidden_dtype();
  step_inputs_ = a.take(DType::kI32, {step_layout(T, S, P).end});
  x_ = a.take(hidden, {T, c.hidden_size});
  x_spare_ = a.take(hidden, {T, c.hidden_size});
  h_ = a.take(hidden, {T, c.hidden_size});
  h2_ = a.take(hidden, {T, c.hidden_size});
  final_rows_ = a.take(act, {T, c.hidden_size});
  const int64_t inter = max_intermediate();
  const int64_t k =
      std::max<int64_t>(1, c.n_expert_used + MoeBlock::folded_shared_experts(c, options_.experts_on_host));
  scratch_.qkv = a.take(act, {T, qkv_width()});
  scratch_.attn = a.take(act, {T, attention_width()});
  scratch_.gate_up = a.take(hidden, {T, std::max<int64_t>(2 * inter, 1)});
  scratch_.act = a.take(hidden, {T, std::max<int64_t>(inter, 1)});
  scratch_.router = a.take(DType::kF32, {T, std::max<int64_t>(1, c.n_expert)});
  scratch_.topk_ids = a.take(DType::kI32, {T, k});
  scratch_.topk_w = a.take(DType::kF32, {T, k});
  const size_t moe_ws =
      c.n_expert ? backend_.ops().moe_workspace_bytes(T, k, c.hidden_size, c.moe_intermediate_size) : 0;
  scratch_.moe_ws = a.take_bytes(std::max<size_t>(moe_ws, 1));
  if (c.shared_expert_intermediate_size > 0) {
    scratch_.shared = a.take(hidden, {T, c.hidden_size});
    scratch_.shared_gate = a.take(hidden, {T, 1});
  }
  const int64_t key_dim = c.linear_num_key_heads * c.linear_key_head_dim;
  const int64_t value_dim = c.linear_num_value_heads * c.linear_value_head_dim;
  if (value_dim > 0) {
    scratch_.linear_proj = a.take(hidden, {T, 2 * key_dim + 2 * value_dim + 2 * c.linear_num_value_heads});
    scratch_.linear_conv = a.take(hidden, {T, 2 * key_dim + value_dim});
    scratch_.linear_out = a.take(hidden, {T, value_dim});
  }
}

Status CausalLm::plan_workspace() {
  if (options_.max_pages_per_seq <= 0)
    options_.max_pages_per_seq = static_cast<int32_t>(
        (std::max<int64_t>(config_.max_position_embeddings, options_.page_size) + options_.page_size - 1) /
        options_.page_size);
  Arena measure;
  plan(measure);
  FT_ASSIGN_OR_RETURN(workspace_, backend_.allocate(measure.measured_bytes()));
  Arena arena(workspace_);
  plan(arena);
  step_staging_.assign(static_cast<size_t>(step_inputs_.numel()), 0);
  return name_folded_experts();
}

Status CausalLm::name_folded_experts() {
  const int64_t folded = MoeBlock::folded_shared_experts(config_, options_.experts_on_host);
  if (folded == 0) return ok_status();
  const int64_t T = scratch_.topk_ids.dim(0), k = scratch_.topk_ids.dim(1), routed = k - folded;
  std::vector<int32_t> ids(static_cast<size_t>(T * k), 0);
  std::vector<float> weights(ids.size(), 0.0f);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < folded; ++j) {
      ids[static_cast<size_t>(t * k + routed + j)] = static_cast<int32_t>(config_.n_expert + j);
      weights[static_cast<size_t>(t * k + routed + j)] = 1.0f;
    }
  const Tensor host_ids = Tensor::make(DType::kI32, {T, k}, wrap_host(ids.data(), ids.size() * 4, nullptr));
  const Tensor host_w = Tensor::make(DType::kF32, {T, k}, wrap_host(weights.data(), weights.size() * 4, nullptr));
  FT_RETURN_IF_ERROR(backend_.copy(host_ids, scratch_.topk_ids));
  FT_RETURN_IF_ERROR(backend_.copy(host_w, scratch_.topk_w));
  return backend_.stream().synchronize();
}

Result<MoeBlock> CausalLm::load_moe(WeightLoader& w, const std::string& prefix) {
  const auto& c = config_;
  int64_t n_moe_layers = 0;
  for (int64_t l = 0; l < c.n_layer; ++l) n_moe_layers += c.is_moe_layer(l);
  if (options_.routing_bias && !routing_bias_.defined()) {
    FT_ASSIGN_OR_RETURN(routing_bias_, backend_.empty(DType::kF32, {n_moe_layers, c.n_expert}));
  }
  const int64_t index = moe_blocks_loaded_++;
  FT_ASSIGN_OR_RETURN(MoeBlock block, load_moe_block(w, prefix, n_moe_layers, index));
  // The benchmark's uniform routing (ModelOptions::routing_bias) takes the place of the router's own correction bias.
  if (routing_bias_.defined()) block.selection_bias = routing_bias_.select(0, index);
  return block;
}

Result<MoeBlock> CausalLm::load_moe_block(WeightLoader& w, const std::string& prefix, int64_t n_moe_layers,
                                          int64_t index) {
  const auto& c = config_;
  if (!options_.experts_on_host) return MoeBlock::load(w, prefix, c);
  if (!expert_store_) {
    ExpertShape shape;
    shape.n_layers = n_moe_layers;
    shape.n_expert = c.n_expert;
    shape.d = c.hidden_size;
    shape.inter = c.moe_intermediate_size;
    FT_ASSIGN_OR_RETURN(shape.dtype, w.expert_dtype(prefix + ".experts"));
    shape.biases = w.experts_have_biases(prefix + ".experts");
    if (shape.dtype == DType::kF4E2M1) {  // the checkpoint's shapes before the store's layout is drawn from the config
      FT_RETURN_IF_ERROR(w.checked_fused_experts(prefix + ".experts", shape.n_expert, shape.d, shape.inter));
      if (shape.biases) {
        FT_ASSIGN_OR_RETURN(shape.bias_dtype, w.expert_bias_dtype(prefix + ".experts"));
      }
    }
    shape.act = MoeBlock::activation(c);
    FT_ASSIGN_OR_RETURN(expert_store_, ExpertStore::create(shape));
  }
  if (index >= n_moe_layers) return internal_error("more MoE layers than the config has");
  return MoeBlock::load(w, prefix, c, expert_store_.get(), index);
}

Result<Tensor> CausalLm::upload_f32(const std::vector<float>& values) {
  FT_ASSIGN_OR_RETURN(Tensor t, backend_.empty(DType::kF32, {static_cast<int64_t>(values.size())}));
  Tensor host = Tensor::make(DType::kF32, {static_cast<int64_t>(values.size())},
                             wrap_host(const_cast<float*>(values.data()), values.size() * 4, nullptr));
  FT_RETURN_IF_ERROR(backend_.copy(host, t));
  FT_RETURN_IF_ERROR(backend_.stream().synchronize());
  return t;
}

Status CausalLm::upload_step(const ForwardBatch& b, StepView& step) {
  const int64_t n = b.n_tokens(), S = b.n_seq(), P = options_.max_pages_per_seq;
  if (n <= 0 || n > options_.max_tokens)
    return invalid_argument("step of " + std::to_string(n) + " tokens (the plan allows " +
                            std::to_string(options_.max_tokens) + ")");
  if (S <= 0 || S > options_.max_seqs) return invalid_argument("step of " + std::to_string(S) + " sequences");
  if (b.max_pages > P) return invalid_argument("sequence longer than the page table");
  if (b.positions.size() != b.tokens.size() || b.slots.size() != b.tokens.size() ||
      b.q_start.size() != static_cast<size_t>(S + 1) || b.q_start.back() != n ||
      b.page_table.size() != static_cast<size_t>(S * b.max_pages) || b.logit_rows.size() > static_cast<size_t>(n) ||
      (!b.state_slots.empty() && b.state_slots.size() != static_cast<size_t>(S)))
    return invalid_argument("inconsistent forward batch");
  for (int32_t t : b.tokens)
    if (t < 0 || t >= config_.vocab_size) return invalid_argument("token id " + std::to_string(t) + " out of range");
  for (int32_t r : b.logit_rows)
    if (r < 0 || r >= n) return invalid_argument("logit row out of range");
  const StepLayout at = step_layout(n, S, P);
  int32_t* host = step_staging_.data();
  std::copy(b.tokens.begin(), b.tokens.end(), host + at.tokens);
  std::copy(b.positions.begin(), b.positions.end(), host + at.positions);
  std::copy(b.slots.begin(), b.slots.end(), host + at.slots);
  std::copy(b.logit_rows.begin(), b.logit_rows.end(), host + at.logit_rows);
  std::copy(b.q_start.begin(), b.q_start.end(), host + at.q_start);
  std::copy(b.kv_len.begin(), b.kv_len.end(), host + at.kv_len);
  std::copy(b.state_slots.begin(), b.state_slots.end(), host + at.state_slots);
  for (int64_t s = 0; s < S; ++s)  // columns past the sequence's pages are never read
    std::copy_n(b.page_table.begin() + s * b.max_pages, b.max_pages, host + at.page_table + s * P);
  // One copy from pageable memory: the driver has taken the bytes when it returns, so the next step may refill them.
  const Tensor staged = Tensor::make(DType::kI32, {at.end}, wrap_host(host, static_cast<size_t>(at.end) * 4, nullptr));
  FT_RETURN_IF_ERROR(backend_.copy(staged, step_inputs_.slice(0, 0, at.end)));
  const auto part = [&](int64_t offset, int64_t length) { return step_inputs_.slice(0, offset, length); };
  step.n_tokens = n;
  step.tokens = part(at.tokens, n);
  step.positions = part(at.positions, n);
  step.slots = part(at.slots, n);
  step.logit_rows = part(at.logit_rows, static_cast<int64_t>(b.logit_rows.size()));  // may be empty
  step.meta.q_start = part(at.q_start, S + 1);
  step.meta.kv_len = part(at.kv_len, S);
  // The attention sees the table's first columns only, a width class that covers the step's longest row: its launch
  // is sized from that width, so short rows under a server's long context run the launch a short context would.
  int64_t longest = 0;
  for (int32_t len : b.kv_len) longest = std::max<int64_t>(longest, len);
  const int64_t columns = key_capacity_columns(longest, step.meta.page_size, P);
  step.meta.page_table = part(at.page_table, S * P).reshape({S, P}).slice(1, 0, columns);
  step.meta.n_seq = S;
  step.max_seq_tokens = 0;
  for (int64_t s = 0; s < S; ++s)
    step.max_seq_tokens = std::max<int64_t>(step.max_seq_tokens, b.q_start[s + 1] - b.q_start[s]);
  if (!b.state_slots.empty()) step.recurrent = {step.meta.q_start, step.meta.kv_len, part(at.state_slots, S), S};
  return ok_status();
}

Status CausalLm::stage(const ForwardBatch& batch, KvCache& kv) {
  step_ = StepView{};
  step_.meta.page_size = kv.page_size();
  n_logit_rows_ = static_cast<int64_t>(batch.logit_rows.size());
  logits_of_every_row_ = n_logit_rows_ == batch.n_tokens();
  for (int64_t i = 0; i < n_logit_rows_ && logits_of_every_row_; ++i)
    logits_of_every_row_ = batch.logit_rows[static_cast<size_t>(i)] == i;
  return upload_step(batch, step_);
}

Status CausalLm::run_staged(KvCache& kv, const Tensor& logits) {
  const OpTable& ops = backend_.ops();
  Stream& s = backend_.stream();
  const int64_t n = step_.n_tokens, r = n_logit_rows_;
  if (n <= 0) return invalid_argument("run_staged: no batch staged");
  if (logits.dim(0) < r || logits.dim(1) != config_.vocab_size) return invalid_argument("logits tensor shape");
  const Tensor h = rows(h_, n), h2 = rows(h2_, n);
  Residual residual(rows(x_, n), rows(x_spare_, n));
  FT_RETURN_IF_ERROR(ops.embedding(embed_, step_.tokens, residual.x(), s));
  LayerContext ctx{ops, s, step_, kv, expert_cache_};
  for (int64_t l = 0; l < config_.n_layer; ++l) FT_RETURN_IF_ERROR(forward_layer(l, ctx, residual, h, h2));
  if (r == 0) return ok_status();  // a step of prefill chunks that end no prompt
  // Every row's logits in order (decode steps): the last layer's update, the final norm and lm_head as one
  // projection. Not over an f32 residual stream (Qwen3.5): lm_head would read f32 rows instead of act-dtype ones.
  if (logits_of_every_row_ && hidden_dtype() == options_.act_dtype) {
    const LayerInput in = residual.add_and_norm(h2, final_norm_, h, final_norm_params_);
    return project(ctx, in, lm_head_, Tensor{}, logits.slice(0, 0, r));
  }
  const Tensor& x = residual.x();
  FT_RETURN_IF_ERROR(ops.add(x, h2, x, s));  // the last layer's output
  const Tensor last = rows(final_rows_, r);
  FT_RETURN_IF_ERROR(ops.embedding(x, step_.logit_rows, last, s));  // gather the wanted rows
  FT_RETURN_IF_ERROR(ops.rms_norm(last, final_norm_, last, final_norm_params_, s));
  return ops.matmul(last, lm_head_, Tensor{}, logits.slice(0, 0, r), s);
}

Status CausalLm::forward(const ForwardBatch& batch, KvCache& kv, const Tensor& logits) {
  FT_RETURN_IF_ERROR(stage(batch, kv));
  FT_RETURN_IF_ERROR(run_staged(kv, logits));
  return backend_.stream().synchronize();
}

}  // namespace ft
