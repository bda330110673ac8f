// Memory plan: KV pages = (budget - weights - workspace - state) / page bytes, within [floor, useful], or as
// overridden.
#include "engine/memory_plan.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace ft {

namespace {
std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}
}  // namespace

uint64_t available_memory(Device device) {
  if (!device.is_cpu()) return 0;
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
}

namespace {
// Without an explicit budget: what is already in use for weights and workspace (planned after they were
// loaded), plus `ratio` of what the device still has available.
uint64_t fixed_plus_available(const MemoryPlanInput& in) {
  return in.weights + in.workspace + in.state_bytes + static_cast<uint64_t>(in.ratio * static_cast<double>(available_memory(in.device)));
}
}  // namespace

namespace {
// The expert cache's slots: as asked (--moe-cache-size, --moe-cache-rate) or what the budget leaves after `fixed`
// and the KV floor; at least one step's experts, at most every expert.
Status plan_expert_cache(const MemoryPlanInput& in, MemoryPlan& p, uint64_t fixed) {
  p.expert_keys = in.expert_keys;
  int64_t slots = in.expert_slots;
  if (slots == 0 && in.expert_rate > 0)
    slots = static_cast<int64_t>(std::ceil(in.expert_rate * static_cast<double>(in.expert_keys)));
  if (slots == 0) {
    const uint64_t floor = fixed + in.expert_cache_fixed +
                           static_cast<uint64_t>(std::max(in.kv_reserve_pages, in.min_pages)) * in.page_bytes;
    slots = p.budget > floor ? static_cast<int64_t>((p.budget - floor) / in.expert_slot_bytes) : 0;
  }
  slots = std::min(slots, in.expert_keys);
  if (slots < in.min_expert_slots)
    return out_of_memory("memory budget " + gib(p.budget) + " leaves room for " + std::to_string(slots) +
                         " expert cache slots after " + gib(fixed) + " of weights, workspace and state and the KV "
                         "floor; one step needs " + std::to_string(in.min_expert_slots) +
                         " (raise --memory-budget, lower --kv-reserve-tokens or --context-length)");
  p.expert_slots = slots;
  p.expert_cache_bytes = static_cast<uint64_t>(slots) * in.expert_slot_bytes + in.expert_cache_fixed;
  return ok_status();
}
}  // namespace

Result<MemoryPlan> plan_memory(const MemoryPlanInput& in) {
  MemoryPlan p;
  p.weights = in.weights;
  p.workspace = in.workspace;
  p.state_bytes = in.state_bytes;
  p.page_size = in.page_size;
  if (in.page_bytes == 0) return invalid_argument("memory plan: zero page size");
  if (in.num_pages > 0 || in.num_tokens > 0) {
    p.kv_pages = in.num_pages > 0 ? in.num_pages : (in.num_tokens + in.page_size - 1) / in.page_size;
    p.kv_bytes = static_cast<uint64_t>(p.kv_pages) * in.page_bytes;
    p.budget = p.weights + p.workspace + p.state_bytes + p.kv_bytes;
  } else {
    p.budget = in.budget ? in.budget
                         : fixed_plus_available(in);
    uint64_t fixed = p.weights + p.workspace + p.state_bytes + kRuntimeReserveBytes;
    if (in.expert_slot_bytes > 0) {
      FT_RETURN_IF_ERROR(plan_expert_cache(in, p, fixed));
      fixed += p.expert_cache_bytes;
    }
    const uint64_t left = p.budget > fixed ? p.budget - fixed : 0;
    p.kv_pages = static_cast<int64_t>(left / in.page_bytes);
    if (in.max_useful_pages > 0) p.kv_pages = std::min(p.kv_pages, in.max_useful_pages);
    p.kv_bytes = static_cast<uint64_t>(p.kv_pages) * in.page_bytes;
  }
  if (in.expert_slot_bytes > 0 && p.expert_slots == 0) {  // KV given explicitly: the cache takes what is left
    const uint64_t fixed = p.weights + p.workspace + p.state_bytes + p.kv_bytes + kRuntimeReserveBytes;
    MemoryPlanInput rest = in;  // the KV is already counted in `fixed`
    rest.kv_reserve_pages = 0;
    rest.min_pages = 0;
    p.budget = in.budget ? in.budget : fixed_plus_available(in) + p.kv_bytes;
    FT_RETURN_IF_ERROR(plan_expert_cache(rest, p, fixed));
  }
  if (p.kv_pages < in.min_pages)
    return out_of_memory("memory budget " + gib(p.budget) + " leaves room for " + std::to_string(p.kv_pages) +
                         " KV pages after " + gib(p.weights) + " of weights and " + gib(p.workspace) +
                         " of workspace; one full-context sequence needs " + std::to_string(in.min_pages) +
                         " (lower --context-length or --max-prefill-length, or raise --memory-budget)");
  return p;
}

std::string MemoryPlan::describe() const {
  std::ostringstream o;
  const uint64_t total = weights + workspace + state_bytes + expert_cache_bytes + kv_bytes;
  o << "memory plan (budget " << gib(budget) << "): weights " << gib(weights) << " + workspace " << gib(workspace);
  if (state_bytes) o << " + recurrent state " << gib(state_bytes);
  if (expert_slots) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.1f%%", 100.0 * static_cast<double>(expert_slots) / static_cast<double>(expert_keys));
    o << " + expert cache " << gib(expert_cache_bytes) << " (" << expert_slots << " of " << expert_keys
      << " experts = " << rate << ")";
  }
  o << " + KV " << gib(kv_bytes) << " (" << kv_pages << " pages of " << page_size << " tokens = "
    << kv_pages * page_size << " tokens) = " << gib(total);
  return o.str();
}

}  // namespace ft
