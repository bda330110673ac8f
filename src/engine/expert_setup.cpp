// Expert placement: backend choice, plan inputs, cache creation.
#include "engine/expert_setup.h"

#include <algorithm>

#include "core/thread_pool.h"

namespace ft {

MoeBackend resolve_moe_backend(const MoeOptions& o, const Backend& device, double* share, std::string* note) {
  *share = 0.5;
  if (o.backend != MoeBackend::kAuto && o.backend != MoeBackend::kHybrid) return o.backend;
  if (o.backend == MoeBackend::kAuto && device.device().is_cpu()) return MoeBackend::kFused;
  const std::string path = o.profile_path.empty() ? default_profile_path() : o.profile_path;
  auto profile = load_profile(path);
  if (o.backend == MoeBackend::kHybrid) {  // start from the balanced share when the machine was profiled
    if (profile.ok()) *share = balanced_fetch_share(*profile);
    return o.backend;
  }
  if (!profile.ok()) {
    *note = "moe backend auto: " + profile.status().message() + "; using offload";
    return MoeBackend::kOffload;
  }
  *share = balanced_fetch_share(*profile);
  const MoeBackend b = pick_moe_backend(&*profile);
  *note = std::string("moe backend auto: ") + moe_backend_name(b) + " from " + path + " (PCIe " +
          std::to_string(profile->h2d_kernel) + " GB/s, CPU experts " + std::to_string(profile->cpu_experts) + " GB/s)";
  return b;
}

ExpertCacheOptions expert_cache_options(const Model& model, MoeBackend backend, double share, int cpu_threads) {
  const ModelOptions& mo = model.options();
  ExpertCacheOptions c;
  c.backend = backend;
  c.max_tokens = mo.max_tokens;
  c.n_expert_used = std::max<int64_t>(model.config().n_expert_used, 1);
  // Every decode batch a graph is captured for takes the slot path (a streamed step's buffer choice is host state).
  c.slot_path_max_tokens = std::max<int64_t>(16, mo.max_seqs);
  c.fetch_share = share;
  // The CPU expert pool leaves a core to the driver thread that runs its jobs and one to the thread waiting on
  // the device.
  c.cpu_threads = cpu_threads > 0 ? cpu_threads : std::max(1, hardware_threads() - 2);
  return c;
}

void add_expert_plan(MemoryPlanInput& in, const Model& model, const ExpertCacheOptions& cache, const MoeOptions& o) {
  const ExpertStore* store = model.expert_store();
  if (!store) return;
  in.expert_slot_bytes = ExpertCache::slot_bytes(store->shape());
  in.expert_cache_fixed = ExpertCache::fixed_bytes(store->shape(), cache);
  in.expert_keys = store->n_keys();
  // One layer's experts in a decode step of every running sequence must fit the slots (their graphs take the slot
  // path); larger steps fall back to streaming when the slots are few.
  in.min_expert_slots =
      std::min(store->shape().n_expert, static_cast<int64_t>(model.options().max_seqs) * cache.n_expert_used);
  in.expert_slots = o.cache_size;
  in.expert_rate = o.cache_rate;
  in.kv_reserve_pages = (o.kv_reserve_tokens + in.page_size - 1) / in.page_size;
}

Result<std::unique_ptr<ExpertCache>> attach_expert_cache(Backend& device, Model& model, ExpertCacheOptions cache,
                                                         int64_t slots) {
  ExpertStore* store = model.expert_store();
  if (!store) return invalid_argument("attach_expert_cache: the model's experts are resident");
  cache.n_slots = slots;
  FT_ASSIGN_OR_RETURN(auto c, ExpertCache::create(device, *store, cache));
  model.set_expert_cache(c.get());
  return c;
}

}  // namespace ft
