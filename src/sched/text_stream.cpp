// TextStream implementation.
#include "sched/text_stream.h"

#include <algorithm>

namespace ft {

TextStream::TextStream(const tok::Tokenizer& tokenizer, std::vector<std::string> stop_strings,
                       bool skip_special_tokens)
    : decoder_(tokenizer, skip_special_tokens) {
  for (auto& s : stop_strings)
    if (!s.empty()) stops_.push_back(std::move(s));
}

std::string TextStream::push(int32_t id) {
  if (stopped_) return {};
  pending_ += decoder_.push(id);
  return release(false);
}

std::string TextStream::finish() {
  if (stopped_) return {};
  pending_ += decoder_.finish();
  return release(true);
}

std::string TextStream::release(bool final) {
  // The earliest match of any stop string (the longest one on a tie).
  size_t best = std::string::npos;
  for (const auto& s : stops_) {
    const size_t at = pending_.find(s);
    if (at != std::string::npos && (at < best || (at == best && s.size() > matched_.size()))) {
      best = at;
      matched_ = s;
    }
  }
  if (best != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, best);
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of a stop string.
  size_t hold = 0;
  if (!final) {
    for (const auto& s : stops_) {
      const size_t max_len = std::min(s.size() - 1, pending_.size());
      for (size_t len = max_len; len > hold; --len)
        if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
          hold = len;
          break;
        }
    }
  }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

}  // namespace ft
