// IncrementalDecoder: streaming detokenization that never emits a partial UTF-8 character.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ft::tok {

class Tokenizer;

// Push ids one at a time and get the text they complete. Text is held back while the decode of the
// pending ids ends in an incomplete character (shown by HF decode as U+FFFD); finish() releases
// what is left. The concatenation of all outputs equals tokenizer.decode(all ids).
// Cost per push: decoding a window of the last few ids (the ids since the last emitted text).
class IncrementalDecoder {
 public:
  IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens);

  std::string push(int32_t id);
  // Whatever was held back (possibly ending in U+FFFD when the ids stop mid-character).
  std::string finish();

 private:
  std::string decode_from(size_t begin, size_t end) const;

  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;
  size_t prefix_ = 0;  // the window starts here: ids_[prefix_, read_) were already emitted
  size_t read_ = 0;
};

}  // namespace ft::tok
