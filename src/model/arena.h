// Arena: carves the activation workspace of a model out of one device allocation, planned once.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>

#include "backend/backend.h"

namespace ft {

// Used twice: first `measuring` (no memory, only sizes), then over a buffer of measured_bytes().
// Every tensor keeps a fixed address for the model's lifetime (CUDA graphs replay those addresses).
class Arena {
 public:
  Arena() = default;                                   // measuring
  explicit Arena(std::shared_ptr<Buffer> buffer) : buffer_(std::move(buffer)) {}
  Tensor take(DType dtype, std::initializer_list<int64_t> shape);
  Tensor take_bytes(size_t bytes);
  size_t measured_bytes() const { return used_; }
  bool measuring() const { return buffer_ == nullptr; }

 private:
  std::shared_ptr<Buffer> buffer_;
  size_t used_ = 0;
};

}  // namespace ft
