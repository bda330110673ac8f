// The memory budget solver: weights, then the planned workspace and the recurrent-state slots, then the KV pool
// from what is left.
#pragma once

#include <cstdint>
#include <string>

#include "core/buffer.h"
#include "freetoken/status.h"

namespace ft {

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
};

struct MemoryPlan {
  uint64_t budget = 0;
  uint64_t weights = 0;
  uint64_t workspace = 0;
  uint64_t state_bytes = 0;
  uint64_t kv_bytes = 0;
  int64_t kv_pages = 0;
  int32_t page_size = 0;
  std::string describe() const;  // the lines printed at start
};

// Bytes the device could still give (host: MemAvailable).
uint64_t available_memory(Device device);
Result<MemoryPlan> plan_memory(const MemoryPlanInput& in);

}  // namespace ft
