// Helpers for parsers that cut text at tags which may arrive split across stream pieces.
#pragma once

#include <algorithm>
#include <string_view>

namespace ft::server {

// The length of the longest suffix of `text` that is a proper prefix of `tag` (text to hold back).
inline size_t partial_tag_suffix(std::string_view text, std::string_view tag) {
  for (size_t len = std::min(text.size(), tag.size() - 1); len > 0; --len)
    if (text.substr(text.size() - len) == tag.substr(0, len)) return len;
  return 0;
}

inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

}  // namespace ft::server
