// Host buffers: aligned heap allocations and wrappers over memory owned elsewhere (mappings).
#include "core/buffer.h"

#include <cstdlib>
#include <cstring>

namespace ft {

std::string Device::to_string() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

namespace {

class HostBuffer final : public Buffer {
 public:
  HostBuffer(void* p, size_t n) : Buffer(p, n, kCpuDevice) {}
  ~HostBuffer() override { std::free(data_); }
};

class WrappedBuffer final : public Buffer {
 public:
  WrappedBuffer(void* p, size_t n, std::shared_ptr<const void> owner)
      : Buffer(p, n, kCpuDevice), owner_(std::move(owner)) {}

 private:
  std::shared_ptr<const void> owner_;
};

}  // namespace

Result<std::shared_ptr<Buffer>> allocate_host(size_t bytes, bool zero) {
  constexpr size_t kAlign = 64;
  size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  if (rounded == 0) rounded = kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (!p) return out_of_memory("host allocation of " + std::to_string(bytes) + " bytes failed");
  if (zero) std::memset(p, 0, rounded);
  return std::shared_ptr<Buffer>(std::make_shared<HostBuffer>(p, bytes));
}

std::shared_ptr<Buffer> wrap_host(void* data, size_t bytes, std::shared_ptr<const void> owner) {
  return std::make_shared<WrappedBuffer>(data, bytes, std::move(owner));
}

}  // namespace ft
