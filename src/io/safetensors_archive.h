// A Hugging Face checkpoint directory: one model.safetensors or shards listed by model.safetensors.index.json.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "freetoken/status.h"
#include "io/safetensors.h"

namespace ft {

inline constexpr const char* kSafetensorsIndexName = "model.safetensors.index.json";
inline constexpr const char* kSafetensorsSingleName = "model.safetensors";

class SafetensorsArchive {
 public:
  // Opens `dir`: the index when present (every shard must exist and hold the tensors mapped to it;
  // a tensor in two shards is an error), else model.safetensors.
  static Result<SafetensorsArchive> open_dir(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const std::vector<std::shared_ptr<SafetensorsFile>>& files() const { return files_; }
  // The tensor's header entry (and the file holding it), or nullptr.
  const TensorInfo* find(std::string_view name, const SafetensorsFile** file = nullptr) const;
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  std::vector<std::string> names() const;  // sorted
  size_t total_bytes() const;              // sum of every tensor's bytes

  // A zero-copy, read-only host view of the mapping with the checkpoint's dtype and shape; the view
  // keeps its file mapped. kNotFound for a missing name, kUnsupported beyond kMaxDims dims.
  Result<Tensor> tensor(std::string_view name) const;
  // Copies the tensor's bytes into dst (nbytes must equal its size); with a pool, the copy is split
  // across its threads so page faults of a cold mapping are taken in parallel.
  Status read_into(std::string_view name, void* dst, size_t nbytes, ThreadPool* pool = nullptr) const;

 private:
  struct Entry {
    size_t file_index;       // into files_
    const TensorInfo* info;  // owned by that file
  };
  Status add_file(std::shared_ptr<SafetensorsFile> file);
  Status open_index(const std::string& index_path);

  std::string dir_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace ft
