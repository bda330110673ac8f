// One safetensors file: mapped read-only, its header parsed and every field validated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "freetoken/status.h"

namespace ft {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // outermost first; empty for a scalar
  size_t offset = 0;           // bytes from the start of the data section
  size_t nbytes = 0;           // == dtype_bytes(dtype, numel)
};

// Header lengths above this are refused as corrupt (real headers are a few MB at most).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// 'name' in quotes with control characters escaped, so a message stays on one line.
std::string quoted_name(std::string_view name);
// "[2, 3]"
std::string shape_to_string(const std::vector<int64_t>& shape);

class SafetensorsFile {
 public:
  // Maps `path` and validates the header: lengths, JSON shape, dtypes, shapes, offsets against the
  // data section, sizes against dtype and shape, overlaps, __metadata__. Errors are one line naming
  // the file (and the tensor): kNotFound, kCorruptFile, or kUnsupported for unknown dtypes.
  static Result<std::shared_ptr<SafetensorsFile>> open(const std::string& path);

  const std::string& path() const { return mapping_->path(); }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // sorted by name
  const TensorInfo* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const MappedFile& mapping() const { return *mapping_; }
  // First byte of the data section, and of one tensor of this file.
  const unsigned char* data_section() const { return mapping_->data() + data_start_; }
  size_t data_section_bytes() const { return mapping_->size() - data_start_; }
  const unsigned char* tensor_data(const TensorInfo& info) const { return data_section() + info.offset; }

 private:
  SafetensorsFile() = default;

  std::shared_ptr<MappedFile> mapping_;
  size_t data_start_ = 0;  // 8 + header length
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace ft
