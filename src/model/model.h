// Model: a causal LM that runs one ForwardBatch over a paged KV cache and writes next-token logits.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "io/model_config.h"
#include "kv/kv_cache.h"
#include "model/forward_batch.h"
#include "moe/expert_cache.h"

namespace ft {

struct ModelOptions {
  DType act_dtype = DType::kF32;  // activations (and KV cache)
  int32_t max_tokens = 512;       // tokens per step (the largest prefill chunk plus decode tokens)
  int32_t max_seqs = 1;           // sequences per step
  int32_t max_pages_per_seq = 0;  // page table width; 0: from max_position_embeddings and page size
  int32_t page_size = 16;
  bool show_progress = true;      // a progress bar while loading, on a terminal
  bool experts_on_host = false;   // routed experts into a host ExpertStore (an ExpertCache computes them)
  bool routing_bias = false;      // a selection bias per MoE layer the caller sets (benchmarks: uniform routing)
};

class Model {
 public:
  virtual ~Model() = default;
  const ModelConfig& config() const { return config_; }
  const ModelOptions& options() const { return options_; }
  // What every layer stores per token in the KV cache.
  virtual std::vector<KvLayerShape> kv_layers() const = 0;
  // What every layer keeps per sequence as recurrent state (empty: none); StatePool::slot_bytes of it is what
  // one sequence needs.
  virtual std::vector<StateLayerShape> state_layers() const { return {}; }
  // Runs the batch: stores its keys and values in `kv`, writes logits [batch.logit_rows.size(), vocab] f32
  // into `logits` (a tensor of this model's backend with at least that many rows).
  virtual Status forward(const ForwardBatch& batch, KvCache& kv, const Tensor& logits) = 0;
  // forward() in two halves, so that the second can be captured as a CUDA graph and replayed: stage() uploads
  // the batch's metadata into the model's fixed device buffers; run_staged() enqueues the ops of the last
  // staged batch's shape (no host sync, no allocation, every address fixed) and returns without waiting.
  virtual Status stage(const ForwardBatch& batch, KvCache& kv) = 0;
  virtual Status run_staged(KvCache& kv, const Tensor& logits) = 0;
  // The host store of the routed experts (ModelOptions::experts_on_host), else null; set_expert_cache() attaches
  // what computes them before the first forward.
  virtual ExpertStore* expert_store() const { return nullptr; }
  virtual void set_expert_cache(ExpertCache*) {}
  // With ModelOptions::routing_bias: [n_moe_layers, n_expert] f32 on the backend, added to the router scores for the
  // top-k choice only (the weights stay the router's); zero until the caller writes it. Else undefined.
  virtual Tensor routing_bias() const { return {}; }
  // Changes when run_staged() would enqueue differently shaped work (the expert cache switching paths): graphs
  // captured under an older epoch must be captured again.
  virtual uint64_t graph_epoch() const { return 0; }
  // The keys a row of the staged step may have (0: no step staged): the width of the page table its attention sees
  // (a power of two of pages, at least 64 keys' worth and at most the context's, covering the step's longest row),
  // from which the attention sizes its launch. A graph captured at one capacity replays only steps staged at it.
  virtual int64_t staged_key_capacity() const { return 0; }
  // Bytes of weights on the backend and of the planned activation workspace, for the memory plan.
  virtual size_t weight_bytes() const = 0;
  virtual size_t workspace_bytes() const = 0;

 protected:
  Model(ModelConfig config, ModelOptions options) : config_(std::move(config)), options_(options) {}
  ModelConfig config_;
  ModelOptions options_;
};

// Reads config.json, picks the architecture from the registry and loads the weights onto `backend`.
Result<std::unique_ptr<Model>> load_model(const std::string& dir, Backend& backend, const ModelOptions& options);

}  // namespace ft
