// TextStream: a choice's token ids -> text that is safe to send, with stop strings matched across tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/incremental_decoder.h"

namespace ft {

// Detokenizes incrementally (never a partial UTF-8 character) and matches stop strings over the text.
// Text that could be the start of a stop string is held back until it is known not to be one; once a
// stop string matches, nothing from its first byte on is ever emitted and stopped() is true (the caller
// aborts the request and reports finish_reason "stop"). The concatenation of every push() and finish()
// equals the decode of all ids, cut before the first stop string to be completed (as text arrives, as
// servers check stops; among several completed by the same token, the one that starts first).
class TextStream {
 public:
  TextStream(const tok::Tokenizer& tokenizer, std::vector<std::string> stop_strings, bool skip_special_tokens);

  // The text that `id` makes final.
  std::string push(int32_t id);
  // Everything still held back (nothing once stopped).
  std::string finish();

  bool stopped() const { return stopped_; }
  // The stop string that matched ("" when none did).
  const std::string& matched_stop() const { return matched_; }

 private:
  // Emits the safe part of pending_ (all of it when `final`), checking for stop strings first.
  std::string release(bool final);

  tok::IncrementalDecoder decoder_;
  std::vector<std::string> stops_;
  std::string pending_;  // decoded text not emitted yet
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace ft
