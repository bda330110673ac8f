// Arena implementation: 256-byte aligned bump allocation.
#include "model/arena.h"

#include "core/check.h"

namespace ft {

Tensor Arena::take(DType dtype, std::initializer_list<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  constexpr size_t kAlign = 256;
  const size_t offset = (used_ + kAlign - 1) / kAlign * kAlign;
  used_ = offset + dtype_bytes(dtype, static_cast<size_t>(n));
  if (!buffer_) {
    Tensor t = Tensor::make(dtype, shape, nullptr, 0);
    return t;
  }
  FT_CHECK_MSG(used_ <= buffer_->size(), "arena overflow: plan and use disagree");
  return Tensor::make(dtype, shape, buffer_, offset);
}

Tensor Arena::take_bytes(size_t bytes) { return take(DType::kU8, {static_cast<int64_t>(bytes)}); }

}  // namespace ft
