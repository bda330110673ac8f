// Expert placement from user options: the --moe-strategy choice (auto from the bandwidth profile), the expert
// part of the memory plan, and the expert cache attached to a model whose experts were loaded into host memory.
#pragma once

#include <memory>
#include <string>

#include "engine/memory_plan.h"
#include "model/model.h"
#include "moe/expert_cache.h"

namespace ft {

struct MoeOptions {
  MoeBackend backend = MoeBackend::kFused;
  int64_t cache_size = 0;            // --moe-cache-size: slots; 0: from cache_rate or the budget
  double cache_rate = 0;             // --moe-cache-rate: a fraction of all experts; 0: unset
  int64_t kv_reserve_tokens = 8192;  // --kv-reserve-tokens: the KV floor before the cache takes the rest
  std::string profile_path;          // --bw-profile for auto ("": the default path)
  int cpu_threads = 0;               // CPU expert workers (0: one per core)
};

// The backend a model is loaded for: auto resolved from the bandwidth profile (offload without one); `share`
// gets hybrid's starting share of fetched misses (balanced by the profile, 0.5 without one). Host devices hold every expert already: fused there unless
// asked for explicitly (tests run the cache paths on the CPU).
MoeBackend resolve_moe_backend(const MoeOptions& o, const Backend& device, double* share, std::string* note);

// The cache's options for a loaded model (n_slots still 0); cpu_threads 0 becomes all cores but two.
ExpertCacheOptions expert_cache_options(const Model& model, MoeBackend backend, double share, int cpu_threads);

// Fills MemoryPlanInput's expert fields for a model with an expert store.
void add_expert_plan(MemoryPlanInput& in, const Model& model, const ExpertCacheOptions& cache, const MoeOptions& o);

// Creates the cache with `slots` slots and attaches it to the model.
Result<std::unique_ptr<ExpertCache>> attach_expert_cache(Backend& device, Model& model, ExpertCacheOptions cache,
                                                         int64_t slots);

}  // namespace ft
