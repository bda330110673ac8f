// Read-only memory mapping of a whole file.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "freetoken/status.h"

namespace ft {

class MappedFile {
 public:
  static Result<std::shared_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const unsigned char* data() const { return static_cast<const unsigned char*>(data_); }
  size_t size() const { return size_; }

 private:
  MappedFile(std::string path, void* data, size_t size) : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  void* data_;
  size_t size_;
};

// Whole file into a string (for config.json and other small files).
Result<std::string> read_text_file(const std::string& path);

}  // namespace ft
