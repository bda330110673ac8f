// The memory budget solver: weights, then the planned workspace and the recurrent-state slots, then the KV pool
// from what is left.
#pragma once

#include <cstdint>
#include <string>

#include "core/buffer.h"
#include "freetoken/status.h"

namespace ft {

// Held back from every budget for captured graphs and the libraries' own allocations (0.05 GiB measured on the
// H200 after warm-up).
inline constexpr uint64_t kRuntimeReserveBytes = 96ull << 20;

struct MemoryPlanInput {
  Device device;
  uint64_t budget = 0;          // bytes; 0: ratio of what the device has available
  double ratio = 0.9;
  uint64_t weights = 0;
  uint64_t workspace = 0;       // activations of the largest step, step inputs, logits
  uint64_t state_bytes = 0;     // recurrent-state slots: one per sequence that can be alive
  uint64_t page_bytes = 0;      // one KV page over all layers
  int32_t page_size = 16;
  int64_t min_pages = 1;        // the floor: one sequence of the full context
  int64_t max_useful_pages = 0; // more can never be used (every running sequence at full context)
  int64_t num_pages = 0;        // overrides
  int64_t num_tokens = 0;
  // Routed experts in host memory: a device cache of slots takes what the budget leaves after the KV floor.
  uint64_t expert_slot_bytes = 0;   // 0: no expert cache
  uint64_t expert_cache_fixed = 0;  // its buffers and tables besides the slots
  int64_t expert_keys = 0;          // every expert of every MoE layer: more slots are never useful
  int64_t min_expert_slots = 0;     // one step's experts on the slot path
  int64_t expert_slots = 0;         // --moe-cache-size; 0: from expert_rate, else from the budget
  double expert_rate = 0;           // --moe-cache-rate: a fraction of expert_keys
  int64_t kv_reserve_pages = 0;     // the KV floor kept before the cache takes the rest (--kv-reserve-tokens)
};

struct MemoryPlan {
  uint64_t budget = 0;
  uint64_t weights = 0;
  uint64_t workspace = 0;
  uint64_t state_bytes = 0;
  uint64_t kv_bytes = 0;
  int64_t kv_pages = 0;
  int32_t page_size = 0;
  int64_t expert_slots = 0;        // device slots of the expert cache (0: none)
  int64_t expert_keys = 0;
  uint64_t expert_cache_bytes = 0;
  std::string describe() const;  // the lines printed at start
};

// Bytes the device could still give (host: MemAvailable).
uint64_t available_memory(Device device);
Result<MemoryPlan> plan_memory(const MemoryPlanInput& in);

}  // namespace ft
