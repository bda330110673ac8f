// Host buffers: aligned heap allocations and wrappers over memory owned elsewhere (mappings).
#include "core/buffer.h"

#include <sys/mman.h>

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

// Large zero-filled allocations come from anonymous mappings: the kernel supplies zero pages on first
// touch, so a big KV pool costs memory only as it is used.
class MappedAnonymousBuffer final : public Buffer {
 public:
  MappedAnonymousBuffer(void* p, size_t n, size_t mapped) : Buffer(p, n, kCpuDevice), mapped_(mapped) {}
  ~MappedAnonymousBuffer() override { ::munmap(data_, mapped_); }

 private:
  size_t mapped_;
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
  constexpr size_t kLazyZeroBytes = size_t{1} << 20;
  if (zero && bytes >= kLazyZeroBytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return out_of_memory("host mapping of " + std::to_string(bytes) + " bytes failed");
    return std::shared_ptr<Buffer>(std::make_shared<MappedAnonymousBuffer>(p, bytes, bytes));
  }
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
