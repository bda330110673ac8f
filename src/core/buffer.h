// Devices and buffers: a Buffer is one allocation (host heap, a file mapping, GPU memory).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "freetoken/status.h"

namespace ft {

enum class DeviceType { kCpu, kCuda };

struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;
  bool is_cpu() const { return type == DeviceType::kCpu; }
  bool operator==(const Device&) const = default;
  std::string to_string() const;
};

inline constexpr Device kCpuDevice{DeviceType::kCpu, 0};

class Buffer {
 public:
  virtual ~Buffer() = default;
  void* data() const { return data_; }
  size_t size() const { return size_; }
  Device device() const { return device_; }

 protected:
  Buffer(void* data, size_t size, Device device) : data_(data), size_(size), device_(device) {}
  void* data_;
  size_t size_;
  Device device_;
};

// Host memory aligned to 64 bytes (zero-filled when `zero` is set).
Result<std::shared_ptr<Buffer>> allocate_host(size_t bytes, bool zero = true);
// A buffer over memory someone else owns; `owner` is kept alive as long as the buffer.
std::shared_ptr<Buffer> wrap_host(void* data, size_t bytes, std::shared_ptr<const void> owner);

}  // namespace ft
