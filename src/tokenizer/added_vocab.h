// Added tokens: leftmost-longest matching of their text in the input, with lstrip/rstrip/single_word.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ft::tok {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// A stretch of input: plain text (id < 0) or one added token.
struct Segment {
  size_t begin, end;
  int32_t id;
};

// The added tokens of one matching set (the non-normalized or the normalized ones), as a byte trie.
class AddedTokenMatcher {
 public:
  // `patterns[i]` is the text matched for tokens[i] (already normalized for the normalized set).
  AddedTokenMatcher(std::vector<AddedToken> tokens, const std::vector<std::string>& patterns);
  bool empty() const { return tokens_.empty(); }

  // Cuts `text` into plain-text and added-token segments, as tokenizers' split_with_indices.
  void split(std::string_view text, std::vector<Segment>& out) const;

 private:
  struct Match {
    int32_t token;  // index into tokens_, or -1
    size_t end;
  };
  // The longest pattern starting at text[pos].
  Match longest_at(std::string_view text, size_t pos) const;

  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // sorted by byte
    int32_t token = -1;                                 // index into tokens_ ending here
  };
  std::vector<AddedToken> tokens_;
  std::vector<Node> nodes_;
  bool first_byte_[256] = {};
};

}  // namespace ft::tok
