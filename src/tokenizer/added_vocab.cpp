// Added-token matching over a byte trie; offsets adjusted for lstrip/rstrip/single_word like tokenizers.
#include "tokenizer/added_vocab.h"

#include <algorithm>

#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace ft::tok {
namespace {

bool ends_with_word(std::string_view s) {
  if (s.empty()) return false;
  size_t start = 0;
  return is_word_char(utf8_prev(s, s.size(), start));
}

bool starts_with_word(std::string_view s) {
  if (s.empty()) return false;
  size_t i = 0;
  return is_word_char(utf8_next(s, i));
}

// Start of the run of white space that ends s.
size_t trailing_space_start(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = 0;
    if (!is_white_space(utf8_prev(s, end, start))) break;
    end = start;
  }
  return end;
}

// Length of the run of white space that starts s.
size_t leading_space_len(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t next = i;
    if (!is_white_space(utf8_next(s, next))) break;
    i = next;
  }
  return i;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens, const std::vector<std::string>& patterns)
    : tokens_(std::move(tokens)) {
  nodes_.emplace_back();
  for (size_t t = 0; t < tokens_.size(); ++t) {
    const std::string& p = patterns[t];
    if (p.empty()) continue;
    first_byte_[static_cast<uint8_t>(p[0])] = true;
    int32_t node = 0;
    for (char ch : p) {
      const auto c = static_cast<uint8_t>(ch);
      auto& kids = nodes_[static_cast<size_t>(node)].children;
      auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, int32_t{-1}));
      if (it == kids.end() || it->first != c) {
        const auto child = static_cast<int32_t>(nodes_.size());
        kids.insert(it, {c, child});
        nodes_.emplace_back();
        node = child;
      } else {
        node = it->second;
      }
    }
    Node& end = nodes_[static_cast<size_t>(node)];
    if (end.token < 0) end.token = static_cast<int32_t>(t);  // the first pattern wins among equal ones
  }
}

AddedTokenMatcher::Match AddedTokenMatcher::longest_at(std::string_view text, size_t pos) const {
  Match best{-1, pos};
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto c = static_cast<uint8_t>(text[i]);
    const auto& kids = nodes_[static_cast<size_t>(node)].children;
    auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, int32_t{-1}));
    if (it == kids.end() || it->first != c) break;
    node = it->second;
    if (nodes_[static_cast<size_t>(node)].token >= 0) best = {nodes_[static_cast<size_t>(node)].token, i + 1};
  }
  return best;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& out) const {
  size_t start_offset = 0;
  for (size_t pos = 0; pos < text.size();) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    const Match m = longest_at(text, pos);
    if (m.token < 0) {
      ++pos;
      continue;
    }
    const AddedToken& tok = tokens_[static_cast<size_t>(m.token)];
    size_t start = pos, stop = m.end;
    pos = m.end;  // matching resumes after the match, whatever the adjustments below
    if (tok.single_word) {
      const bool start_space = start == 0 || !ends_with_word(text.substr(0, start));
      const bool stop_space = stop == text.size() || !starts_with_word(text.substr(stop));
      if (!start_space || !stop_space) continue;
    }
    if (tok.lstrip) start = std::max(trailing_space_start(text.substr(0, start)), start_offset);
    if (tok.rstrip) stop += leading_space_len(text.substr(stop));
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, tok.id});
    start_offset = stop;
  }
  if (start_offset < text.size()) out.push_back({start_offset, text.size(), -1});
}

}  // namespace ft::tok
