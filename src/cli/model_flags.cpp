// Shared model-loading flags -> SessionOptions.
#include "cli/model_flags.h"

namespace ft::cli {

void add_model_flags(Args& a) {
  a.required("model", "DIR", "Hugging Face checkpoint directory (config.json, *.safetensors)");
  a.flag("device", "NAME", "cpu, cuda or ref (the scalar reference ops)", "cpu");
  a.flag("dtype", "TYPE", "activation dtype: f32 (CPU) or bf16/f32 (CUDA)", "f32");
  a.flag("threads", "N", "CPU threads (0 = one per core)", "0");
  a.flag("page-size", "N", "tokens per KV page", "16");
  a.flag("context", "N", "tokens per sequence (0 = the model's max_position_embeddings)", "0");
}

Result<SessionOptions> session_options(const Args& a) {
  SessionOptions o;
  o.model_dir = a.str("model");
  o.device = a.str("device");
  FT_ASSIGN_OR_RETURN(o.act_dtype, dtype_from_name(a.str("dtype")));
  FT_ASSIGN_OR_RETURN(int64_t threads, a.integer("threads"));
  FT_ASSIGN_OR_RETURN(int64_t page_size, a.integer("page-size"));
  FT_ASSIGN_OR_RETURN(int64_t context, a.integer("context"));
  if (threads < 0 || threads > 4096) return invalid_argument("flag --threads out of range");
  if (page_size < 1 || page_size > 4096) return invalid_argument("flag --page-size must be in [1, 4096]");
  if (context < 0 || context > (1 << 24)) return invalid_argument("flag --context out of range");
  o.n_threads = static_cast<int>(threads);
  o.page_size = static_cast<int32_t>(page_size);
  o.context = static_cast<int32_t>(context);
  return o;
}

}  // namespace ft::cli
