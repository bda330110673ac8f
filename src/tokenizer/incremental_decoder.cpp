// IncrementalDecoder: decodes a sliding window [prefix, end) and emits what the newest ids added.
#include "tokenizer/incremental_decoder.h"

#include <span>

#include "tokenizer/tokenizer.h"

namespace ft::tok {
namespace {

bool ends_with_replacement(const std::string& s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xef\xbf\xbd") == 0;
}

}  // namespace

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

std::string IncrementalDecoder::decode_from(size_t begin, size_t end) const {
  return tokenizer_.decode(std::span<const int32_t>(ids_.data() + begin, end - begin), skip_special_tokens_);
}

std::string IncrementalDecoder::push(int32_t id) {
  ids_.push_back(id);
  const std::string before = decode_from(prefix_, read_);
  const std::string now = decode_from(prefix_, ids_.size());
  if (now.size() <= before.size() || ends_with_replacement(now) || now.compare(0, before.size(), before) != 0)
    return {};
  prefix_ = read_;
  read_ = ids_.size();
  return now.substr(before.size());
}

std::string IncrementalDecoder::finish() {
  const std::string before = decode_from(prefix_, read_);
  const std::string now = decode_from(prefix_, ids_.size());
  prefix_ = read_ = ids_.size();
  if (now.size() <= before.size() || now.compare(0, before.size(), before) != 0) return {};
  return now.substr(before.size());
}

}  // namespace ft::tok
