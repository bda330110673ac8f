// StatePool allocation and slot bookkeeping.
#include "kv/state_pool.h"

#include "core/check.h"
#include "kv/page_pool.h"

namespace ft {

size_t StatePool::slot_bytes(const std::vector<StateLayerShape>& layers) {
  size_t total = 0;
  for (const auto& l : layers)
    total += sizeof(float) * static_cast<size_t>(l.conv_history * l.conv_channels + l.n_head * l.key_dim * l.value_dim);
  return total;
}

Result<StatePool> StatePool::create(Backend& backend, const std::vector<StateLayerShape>& layers, int32_t n_slots) {
  StatePool p;
  p.has_state_ = slot_bytes(layers) > 0;
  if (!p.has_state_) return p;
  if (n_slots <= 0) return invalid_argument("a model with recurrent state needs state slots");
  p.used_.assign(static_cast<size_t>(n_slots), false);
  for (int32_t s = n_slots - 1; s >= 0; --s) p.free_.push_back(s);
  for (const auto& l : layers) {
    Tensor conv, delta;
    if (l.conv_channels > 0) {
      FT_ASSIGN_OR_RETURN(conv, backend.empty(DType::kF32, {n_slots, l.conv_history, l.conv_channels}));
    }
    if (l.n_head > 0) {
      FT_ASSIGN_OR_RETURN(delta, backend.empty(DType::kF32, {n_slots, l.n_head, l.key_dim, l.value_dim}));
    }
    p.conv_.push_back(std::move(conv));
    p.delta_.push_back(std::move(delta));
  }
  return p;
}

Result<int32_t> StatePool::allocate() {
  if (free_.empty()) return out_of_kv_pages("all " + std::to_string(n_slots()) + " recurrent state slots are in use");
  const int32_t s = free_.back();
  free_.pop_back();
  used_[static_cast<size_t>(s)] = true;
  return s;
}

void StatePool::release(int32_t slot) {
  FT_CHECK(slot >= 0 && slot < n_slots());
  FT_CHECK_MSG(used_[static_cast<size_t>(slot)], "state slot released twice");
  used_[static_cast<size_t>(slot)] = false;
  free_.push_back(slot);
}

Status StatePool::copy_slot(Backend& backend, int32_t src, int32_t dst) const {
  for (size_t l = 0; l < conv_.size(); ++l) {
    if (conv_[l].defined()) FT_RETURN_IF_ERROR(backend.copy(conv_[l].select(0, src), conv_[l].select(0, dst)));
    if (delta_[l].defined()) FT_RETURN_IF_ERROR(backend.copy(delta_[l].select(0, src), delta_[l].select(0, dst)));
  }
  return ok_status();
}

}  // namespace ft
