// PagePool: fixed-size KV pages handed out by index; exhaustion is a code, a double free a bug.
#pragma once

#include <cstdint>
#include <vector>

#include "freetoken/status.h"

namespace ft {

inline Status out_of_kv_pages(std::string m) { return {StatusCode::kOutOfKvPages, std::move(m)}; }

class PagePool {
 public:
  explicit PagePool(int32_t n_pages);

  int32_t n_pages() const { return static_cast<int32_t>(used_.size()); }
  int32_t n_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t n_used() const { return n_pages() - n_free(); }

  Result<int32_t> allocate();
  // Allocates n pages or none.
  Status allocate(int32_t n, std::vector<int32_t>& out);
  void release(int32_t page);  // FT_CHECKs that the page is in use

 private:
  std::vector<int32_t> free_;  // a stack: the most recently freed page is reused first
  std::vector<bool> used_;
};

}  // namespace ft
