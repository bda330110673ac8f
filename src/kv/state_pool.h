// StatePool: recurrent-state slots of linear-attention layers (conv state + delta-rule state, f32), one slot per
// live sequence, handed out by index; exhaustion is a code (kOutOfKvPages: the cache is full), releasing a free
// slot a bug.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace ft {

// What one layer keeps per sequence (all zero: the layer keeps no recurrent state, e.g. full attention).
struct StateLayerShape {
  int64_t conv_channels = 0;  // conv state [conv_history, conv_channels]: the last kernel - 1 inputs
  int64_t conv_history = 0;
  int64_t n_head = 0;  // delta-rule state [n_head, key_dim, value_dim]
  int64_t key_dim = 0;
  int64_t value_dim = 0;
};

class StatePool {
 public:
  StatePool() = default;  // no slots, no layers
  static Result<StatePool> create(Backend& backend, const std::vector<StateLayerShape>& layers, int32_t n_slots);
  // Bytes one slot takes over all layers (what one sequence needs).
  static size_t slot_bytes(const std::vector<StateLayerShape>& layers);

  bool has_state() const { return has_state_; }
  int32_t n_slots() const { return static_cast<int32_t>(used_.size()); }
  int32_t n_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t n_used() const { return n_slots() - n_free(); }

  Result<int32_t> allocate();
  void release(int32_t slot);  // FT_CHECKs that the slot was in use
  // Copies slot `src` to slot `dst` in every layer (an n > 1 fork).
  Status copy_slot(Backend& backend, int32_t src, int32_t dst) const;

  const Tensor& conv(int64_t layer) const { return conv_[static_cast<size_t>(layer)]; }    // [n_slots, hist, ch] f32
  const Tensor& delta(int64_t layer) const { return delta_[static_cast<size_t>(layer)]; }  // [n_slots, h, dk, dv] f32

 private:
  bool has_state_ = false;
  std::vector<int32_t> free_;  // a stack
  std::vector<bool> used_;
  std::vector<Tensor> conv_, delta_;  // per layer; undefined for layers without state
};

}  // namespace ft
