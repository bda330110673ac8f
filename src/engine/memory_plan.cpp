// Memory plan: KV pages = (budget - weights - workspace - state) / page bytes, within [floor, useful], or as
// overridden.
#include "engine/memory_plan.h"

#include <unistd.h>

#include <algorithm>
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
    const uint64_t fixed = p.weights + p.workspace + p.state_bytes;
    const uint64_t left = p.budget > fixed ? p.budget - fixed : 0;
    p.kv_pages = static_cast<int64_t>(left / in.page_bytes);
    if (in.max_useful_pages > 0) p.kv_pages = std::min(p.kv_pages, in.max_useful_pages);
    p.kv_bytes = static_cast<uint64_t>(p.kv_pages) * in.page_bytes;
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
  const uint64_t total = weights + workspace + state_bytes + kv_bytes;
  o << "memory plan (budget " << gib(budget) << "): weights " << gib(weights) << " + workspace " << gib(workspace);
  if (state_bytes) o << " + recurrent state " << gib(state_bytes);
  o << " + KV " << gib(kv_bytes) << " (" << kv_pages << " pages of " << page_size << " tokens = "
    << kv_pages * page_size << " tokens) = " << gib(total);
  return o.str();
}

}  // namespace ft
