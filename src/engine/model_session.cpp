// ModelSession setup: backend by name, model by architecture, a KV pool sized for the sequences asked for.
#include "engine/model_session.h"

#include <algorithm>
#include <cmath>

#include "core/log.h"

namespace ft {

Result<ModelSession> ModelSession::load(const SessionOptions& o) {
  ModelSession s;
  BackendOptions bo;
  bo.n_threads = o.n_threads;
  FT_ASSIGN_OR_RETURN(s.backend, create_backend(o.device, bo));
  FT_ASSIGN_OR_RETURN(const Backend::MemoryInfo memory, s.backend->memory_info());
  s.device_used_before_weights = memory.total - memory.free;
  if (!s.backend->ops().supports(Op::kMatmul, o.act_dtype, o.act_dtype) &&
      !s.backend->ops().supports(Op::kMatmul, o.act_dtype, DType::kBF16))
    return unsupported(std::string("device ") + s.backend->name() + " does not run " + dtype_name(o.act_dtype) +
                       " activations");
  FT_ASSIGN_OR_RETURN(ModelConfig config, load_model_config(o.model_dir));
  s.context = o.context > 0 ? o.context : static_cast<int32_t>(std::max<int64_t>(config.max_position_embeddings, 1));
  ModelOptions mo;
  mo.act_dtype = o.act_dtype;
  mo.max_tokens = o.max_tokens;
  mo.max_seqs = o.max_seqs;
  mo.page_size = o.page_size;
  mo.max_pages_per_seq = (s.context + o.page_size - 1) / o.page_size;
  mo.show_progress = o.show_progress;
  double share = 0.5;
  std::string note;
  const MoeBackend moe = resolve_moe_backend(o.moe, *s.backend, &share, &note);
  if (!note.empty()) {
    FT_LOG(kInfo) << note;
  }
  mo.experts_on_host = moe != MoeBackend::kFused && config.n_expert > 0;
  FT_ASSIGN_OR_RETURN(s.model, load_model(o.model_dir, *s.backend, mo));
  s.expert_options = expert_cache_options(*s.model, moe, share, o.moe.cpu_threads);
  return s;
}

Result<ModelSession> ModelSession::open(const SessionOptions& o) {
  FT_ASSIGN_OR_RETURN(ModelSession s, load(o));
  FT_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(*s.backend, s.model->kv_layers(), o.act_dtype,
                                                  s.model->options().max_pages_per_seq * o.max_seqs, o.page_size,
                                                  s.model->state_layers(), o.max_seqs));
  s.kv = std::make_unique<KvCache>(std::move(kv));
  if (const ExpertStore* store = s.model->expert_store()) {
    int64_t slots = o.moe.cache_size;
    if (slots == 0 && o.moe.cache_rate > 0)
      slots = static_cast<int64_t>(std::ceil(o.moe.cache_rate * static_cast<double>(store->n_keys())));
    if (slots == 0) slots = store->n_keys();
    FT_ASSIGN_OR_RETURN(s.experts, attach_expert_cache(*s.backend, *s.model, s.expert_options,
                                                       std::min(slots, store->n_keys())));
  }
  return s;
}

}  // namespace ft
