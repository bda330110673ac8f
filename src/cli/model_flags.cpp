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
  add_moe_flags(a);
}

void add_moe_flags(Args& a) {
  a.flag("moe-strategy", "NAME",
         "routed experts: fused (all on the device), offload (device cache, misses over PCIe), cpu (misses on the "
         "CPU), hybrid (misses split, tuned online) or auto (from the `ft bench bw` profile)",
         "fused");
  a.flag("moe-backend", "NAME", "the same as --moe-strategy (upstream's older spelling)");
  a.flag("moe-cpu-threads", "N", "CPU threads computing missed experts for cpu and hybrid (0: all cores but two)", "0");
  a.flag("moe-cache-size", "N", "expert cache slots (default: what the memory budget leaves)", "0");
  a.flag("moe-cache-rate", "F", "expert cache as a fraction of all experts, in (0, 1]", "0");
  a.flag("kv-reserve-tokens", "N", "KV tokens kept before the expert cache takes the rest of the budget", "8192");
  a.flag("bw-profile", "FILE", "bandwidth profile for --moe-strategy auto (default: ~/.cache/freetoken/bw_profile.json)");
}

Result<MoeOptions> moe_options(const Args& a) {
  MoeOptions m;
  if (a.has("moe-backend") && a.has("moe-strategy"))
    return invalid_argument("flags --moe-strategy and --moe-backend are the same setting; give one");
  const std::string strategy = a.has("moe-backend") ? a.str("moe-backend") : a.str("moe-strategy");
  auto backend = moe_backend_from_name(strategy);
  if (!backend.ok())
    return invalid_argument(std::string("flag --") + (a.has("moe-backend") ? "moe-backend" : "moe-strategy") + ": '" +
                            strategy + "' is not fused, offload, cpu, hybrid or auto");
  m.backend = *backend;
  FT_ASSIGN_OR_RETURN(const int64_t cpu_threads, a.integer("moe-cpu-threads", 0, 4096));
  m.cpu_threads = static_cast<int>(cpu_threads);
  FT_ASSIGN_OR_RETURN(m.cache_size, a.integer("moe-cache-size", 0, int64_t{1} << 31));
  FT_ASSIGN_OR_RETURN(m.cache_rate, a.number("moe-cache-rate"));
  FT_ASSIGN_OR_RETURN(m.kv_reserve_tokens, a.integer("kv-reserve-tokens", 0, int64_t{1} << 30));
  if (!(m.cache_rate >= 0 && m.cache_rate <= 1)) return invalid_argument("flag --moe-cache-rate must be in [0, 1]");
  m.profile_path = a.str("bw-profile");
  return m;
}

Result<SessionOptions> session_options(const Args& a) {
  SessionOptions o;
  o.model_dir = a.str("model");
  o.device = a.str("device");
  FT_ASSIGN_OR_RETURN(o.act_dtype, dtype_from_name(a.str("dtype")));
  FT_ASSIGN_OR_RETURN(int64_t threads, a.integer("threads", 0, 4096));
  FT_ASSIGN_OR_RETURN(int64_t page_size, a.integer("page-size", 1, 4096));
  FT_ASSIGN_OR_RETURN(int64_t context, a.integer("context", 0, 1 << 24));
  o.n_threads = static_cast<int>(threads);
  o.page_size = static_cast<int32_t>(page_size);
  o.context = static_cast<int32_t>(context);
  FT_ASSIGN_OR_RETURN(o.moe, moe_options(a));
  return o;
}

}  // namespace ft::cli
