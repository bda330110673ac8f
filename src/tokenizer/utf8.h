// UTF-8 helpers: decode/encode one code point, validation, lossy repair as Rust's from_utf8_lossy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ft::tok {

// Length in bytes of the UTF-8 sequence that starts with byte `b` (1 for continuation/invalid bytes).
inline size_t utf8_len(unsigned char b) {
  if (b < 0x80) return 1;
  if ((b & 0xe0) == 0xc0) return 2;
  if ((b & 0xf0) == 0xe0) return 3;
  if ((b & 0xf8) == 0xf0) return 4;
  return 1;
}

// Decodes the code point at s[i] (s valid UTF-8) and advances i past it.
inline uint32_t utf8_next(std::string_view s, size_t& i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  uint32_t c = p[0];
  if (c < 0x80) {
    i += 1;
    return c;
  }
  if ((c & 0xe0) == 0xc0) {
    i += 2;
    return ((c & 0x1f) << 6) | (p[1] & 0x3f);
  }
  if ((c & 0xf0) == 0xe0) {
    i += 3;
    return ((c & 0x0f) << 12) | ((p[1] & 0x3fu) << 6) | (p[2] & 0x3f);
  }
  i += 4;
  return ((c & 0x07) << 18) | ((p[1] & 0x3fu) << 12) | ((p[2] & 0x3fu) << 6) | (p[3] & 0x3f);
}

// Decodes the code point that ends at s[end) (s valid UTF-8); sets `start` to its first byte.
uint32_t utf8_prev(std::string_view s, size_t end, size_t& start);

void utf8_append(std::string& out, uint32_t cp);

// Length of the longest valid UTF-8 prefix of s.
size_t utf8_valid_prefix(std::string_view s);
inline bool utf8_is_valid(std::string_view s) { return utf8_valid_prefix(s) == s.size(); }

// s with every maximal invalid subsequence replaced by U+FFFD (Rust String::from_utf8_lossy).
std::string utf8_lossy(std::string_view s);

// Number of bytes at the end of s that start an incomplete (but so far valid) UTF-8 sequence.
size_t utf8_incomplete_tail(std::string_view s);

}  // namespace ft::tok
