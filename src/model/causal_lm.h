// CausalLm: what every decoder-only model shares — embedding, step upload, workspace, final norm, LM head.
#pragma once

#include <memory>
#include <vector>

#include "model/arena.h"
#include "model/layers.h"
#include "model/model.h"
#include "model/rope_freqs.h"

namespace ft {

class CausalLm : public Model {
 public:
  Status forward(const ForwardBatch& batch, KvCache& kv, const Tensor& logits) override;
  Status stage(const ForwardBatch& batch, KvCache& kv) override;
  Status run_staged(KvCache& kv, const Tensor& logits) override;
  size_t weight_bytes() const override { return weight_bytes_; }
  size_t workspace_bytes() const override { return workspace_ ? workspace_->size() : 0; }
  ExpertStore* expert_store() const override { return expert_store_.get(); }
  void set_expert_cache(ExpertCache* cache) override { expert_cache_ = cache; }
  Tensor routing_bias() const override { return routing_bias_; }
  uint64_t graph_epoch() const override { return expert_cache_ ? expert_cache_->epoch() : 0; }
  int64_t staged_key_capacity() const override {
    return step_.meta.page_table.defined() ? step_.meta.page_table.dim(1) * step_.meta.page_size : 0;
  }

 protected:
  CausalLm(ModelConfig config, ModelOptions options, Backend& backend)
      : Model(std::move(config), options), backend_(backend) {}

  // Loads embedding, final norm and LM head (tied or not), plans the step tensors and scratch.
  Status load_common(WeightLoader& w, const std::string& prefix = "model");
  // One decoder layer. r is the residual stream; h2 [n, d] holds the previous layer's output, not yet added to it
  // (nothing before layer 0): the layer adds it in its input norm (input_norm) and leaves its own output in h2 in
  // turn (the step adds the last layer's). h [n, d] is free for the layer's use.
  virtual Status forward_layer(int64_t layer, const LayerContext& c, Residual& r, const Tensor& h,
                               const Tensor& h2) = 0;
  // A layer's input, normalised with w into h by its first projection, with the residual update deferred from the
  // layer before (r += h2 from layer 1 on); the layer norms share the final norm's params.
  LayerInput input_norm(int64_t layer, Residual& r, const Tensor& h2, const Tensor& w, const Tensor& h) const {
    return r.add_and_norm(layer == 0 ? Tensor{} : h2, w, h, final_norm_params_);
  }
  // The norm after a layer's attention: r += h2 (attention's output), normalised with w into h.
  LayerInput post_norm(Residual& r, const Tensor& h2, const Tensor& w, const Tensor& h) const {
    return r.add_and_norm(h2, w, h, final_norm_params_);
  }
  // The widest dense MLP intermediate a layer runs through the scratch (a dense MLP or a shared expert; 0 when
  // none): routed experts size their own workspace from moe_intermediate_size.
  virtual int64_t max_intermediate() const = 0;
  // Columns of the fused attention projection (q, k, v; gated attention adds a gate per query head).
  virtual int64_t qkv_width() const { return (config_.n_head + 2 * config_.n_kv_head) * config_.head_dim; }
  // Columns of the attention's output, o_proj's input.
  virtual int64_t attention_width() const { return config_.n_head * config_.head_dim; }
  // The routed experts of the next MoE layer: onto the backend, or into the host expert store (created on the
  // first call) when options_.experts_on_host.
  Result<MoeBlock> load_moe(WeightLoader& w, const std::string& prefix);
  Result<MoeBlock> load_moe_block(WeightLoader& w, const std::string& prefix, int64_t n_moe_layers, int64_t index);
  // The dtype of the residual stream, the layers' inputs and outputs, the MLP and linear-attention activations;
  // attention's q/k/v, its output and the KV cache stay in options_.act_dtype.
  virtual DType hidden_dtype() const { return options_.act_dtype; }
  // Uploads inv_freq to the backend (shared by all layers).
  Result<Tensor> upload_f32(const std::vector<float>& values);

  Backend& backend_;
  LayerScratch scratch_;
  RmsNormParams final_norm_params_;
  size_t weight_bytes_ = 0;  // set by the architecture once its weights are loaded

 private:
  Status plan_workspace();
  // The step's last expert columns, the shared experts a MoeBlock folds into its routed ones: their ids and weight 1.
  Status name_folded_experts();
  Status upload_step(const ForwardBatch& batch, StepView& step);
  void plan(Arena& arena);

  Tensor embed_;       // [vocab, d]
  Tensor final_norm_;  // [d]
  Tensor lm_head_;     // [vocab, d]
  std::shared_ptr<Buffer> workspace_;
  std::unique_ptr<ExpertStore> expert_store_;
  int64_t moe_blocks_loaded_ = 0;
  Tensor routing_bias_;  // [n_moe_layers, n_expert] f32 (ModelOptions::routing_bias)
  ExpertCache* expert_cache_ = nullptr;
  // A step's inputs (tokens, positions, slots, logit rows, sequence starts, kv lengths, state slots, page table) in
  // one i32 buffer sized for the largest step and packed by step_layout(): one copy stages a step, and a step's
  // inputs are at the same addresses whenever its token and sequence counts are.
  Tensor step_inputs_;
  Tensor x_, x_spare_, h_, h2_;  // [T, d] act: the residual stream's two buffers (Residual), h, h2
  Tensor final_rows_;            // [T, d] act: the rows whose logits are wanted
  std::vector<int32_t> step_staging_;  // the host side of step_inputs_
  StepView step_;             // the last staged batch
  int64_t n_logit_rows_ = 0;          // its logit rows
  bool logits_of_every_row_ = false;  // the logit rows are its rows in order (no gather)
};

}  // namespace ft
