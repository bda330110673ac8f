// UTF-8 helpers: validation and the maximal-subpart replacement rule of Rust's from_utf8_lossy.
#include "tokenizer/utf8.h"

namespace ft::tok {
namespace {

// Bytes of a valid sequence starting at s[i], or 0; `valid_prefix` gets how many leading bytes
// form a prefix of some valid sequence (the maximal subpart replaced by one U+FFFD).
size_t sequence_len(std::string_view s, size_t i, size_t& valid_prefix) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  const unsigned char b0 = p[i];
  valid_prefix = 1;
  if (b0 < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xbf;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    need = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    need = 3;
    if (b0 == 0xe0) lo = 0xa0;
    if (b0 == 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    need = 4;
    if (b0 == 0xf0) lo = 0x90;
    if (b0 == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  for (size_t k = 1; k < need; ++k) {
    if (i + k >= n) return 0;
    const unsigned char b = p[i + k];
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xbf;
    if (b < l || b > h) return 0;
    valid_prefix = k + 1;
  }
  return need;
}

}  // namespace

uint32_t utf8_prev(std::string_view s, size_t end, size_t& start) {
  start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xc0) == 0x80) --start;
  size_t i = start;
  return utf8_next(s, i);
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

size_t utf8_valid_prefix(std::string_view s) {
  size_t i = 0, prefix = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = sequence_len(s, i, prefix);
    if (len == 0) return i;
    i += len;
  }
  return i;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0, prefix = 0;
  while (i < s.size()) {
    const size_t len = sequence_len(s, i, prefix);
    if (len == 0) {
      out += "\xef\xbf\xbd";
      i += prefix;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

size_t utf8_incomplete_tail(std::string_view s) {
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t i = n - back;
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xc0) == 0x80) continue;  // continuation byte: look further back
    size_t prefix = 0;
    const size_t len = sequence_len(s, i, prefix);
    return (len == 0 && prefix == back && utf8_len(b) > back) ? back : 0;
  }
  return 0;
}

}  // namespace ft::tok
