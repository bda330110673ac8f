// Writes a safetensors file streamed to disk: declare tensors, write the header, then their bytes in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "freetoken/status.h"

namespace ft {

// Usage: add() every tensor, begin(), then write_tensor() each one in declaration order (or
// write_bytes() the data section in pieces of any size), then finish(). The file is written to
// "PATH.tmp" and renamed to PATH by finish(), so a failed or abandoned writer leaves no PATH behind.
class SafetensorsWriter {
 public:
  explicit SafetensorsWriter(std::string path) : path_(std::move(path)) {}
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  Status add(std::string name, DType dtype, std::vector<int64_t> shape);
  void set_metadata(std::string key, std::string value) { metadata_[std::move(key)] = std::move(value); }
  // Writes the 8-byte header length and the JSON header, padded with spaces to a multiple of 8.
  Status begin();
  // The next declared tensor's bytes, whole: `name` must be that tensor and nbytes its size.
  Status write_tensor(std::string_view name, const void* data, size_t nbytes);
  // The next nbytes of the data section, crossing tensor boundaries freely.
  Status write_bytes(const void* data, size_t nbytes);
  // Checks every byte was written, flushes, closes and renames into place.
  Status finish();

 private:
  struct Declared {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    size_t offset;
    size_t nbytes;
  };
  Status fail(Status status);  // closes and removes the temporary file
  std::string tmp_path() const { return path_ + ".tmp"; }

  std::string path_;
  std::vector<Declared> tensors_;
  std::set<std::string, std::less<>> names_;
  std::map<std::string, std::string> metadata_;
  size_t data_bytes_ = 0;  // declared so far
  size_t written_ = 0;     // data-section bytes written
  size_t next_ = 0;        // the tensor write_tensor() expects
  std::FILE* out_ = nullptr;
  bool begun_ = false;
};

// Writes small host tensors (contiguous) and string metadata in one call.
Status write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace ft
