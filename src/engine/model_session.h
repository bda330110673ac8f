// ModelSession: a backend, a loaded model and its KV cache, set up together from user options.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "kv/kv_cache.h"
#include "engine/expert_setup.h"
#include "model/model.h"

namespace ft {

struct SessionOptions {
  std::string model_dir;
  std::string device = "cpu";  // ref | cpu | cuda
  DType act_dtype = DType::kF32;
  int n_threads = 0;
  int32_t max_tokens = 512;    // tokens per step
  int32_t context = 0;         // tokens per sequence; 0 = the model's max_position_embeddings
  int32_t page_size = 16;
  int32_t max_seqs = 1;
  bool show_progress = true;
  MoeOptions moe;              // where routed experts live
};

struct ModelSession {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<KvCache> kv;  // empty after load()
  std::unique_ptr<ExpertCache> experts;  // when the experts are in host memory (attached by open())
  ExpertCacheOptions expert_options;     // resolved by load() for the model
  int32_t context = 0;          // tokens per sequence, resolved
  uint64_t device_used_before_weights = 0;  // device memory in use once the backend existed (its own scratch)

  // The backend by name and the model on it, its workspace planned for options.max_tokens / max_seqs; no KV
  // cache yet (the engine sizes it from its memory plan).
  static Result<ModelSession> load(const SessionOptions& options);
  // load() plus a KV cache (and state slots) holding max_seqs sequences of the full context, and an expert cache
  // of options.moe.cache_size slots (or cache_rate of all experts; every expert when neither is set).
  static Result<ModelSession> open(const SessionOptions& options);
};

}  // namespace ft
