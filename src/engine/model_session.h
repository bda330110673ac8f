// ModelSession: a backend, a loaded model and its KV cache, set up together from user options.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "kv/kv_cache.h"
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
};

struct ModelSession {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<KvCache> kv;  // empty after load()
  int32_t context = 0;          // tokens per sequence, resolved

  // The backend by name and the model on it, its workspace planned for options.max_tokens / max_seqs; no KV
  // cache yet (the engine sizes it from its memory plan).
  static Result<ModelSession> load(const SessionOptions& options);
  // load() plus a KV cache (and state slots) holding max_seqs sequences of the full context.
  static Result<ModelSession> open(const SessionOptions& options);
};

}  // namespace ft
