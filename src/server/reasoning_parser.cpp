// ReasoningParser implementation: a four-state scanner over the buffered text.
#include "server/reasoning_parser.h"

#include "server/tag_scan.h"

namespace ft::server {
namespace {
constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";
}  // namespace

ReasoningParser::ReasoningParser(ReasoningOptions o)
    : state_(!o.enabled ? State::kContent : o.start_inside ? State::kReasoning : State::kStart) {}

void ReasoningParser::push(std::string_view text, std::string& reasoning, std::string& content) {
  buf_.append(text);
  for (;;) {
    switch (state_) {
      case State::kContent:
        content += buf_;
        buf_.clear();
        return;
      case State::kStart: {
        size_t i = 0;
        while (i < buf_.size() && is_space(buf_[i])) ++i;
        const std::string_view rest = std::string_view(buf_).substr(i);
        if (rest.substr(0, kOpen.size()) == kOpen) {
          buf_.erase(0, i + kOpen.size());
          state_ = State::kReasoning;
          continue;
        }
        if (rest.size() < kOpen.size() && kOpen.substr(0, rest.size()) == rest) return;  // may still open
        state_ = State::kContent;
        continue;
      }
      case State::kReasoning: {
        const size_t at = buf_.find(kClose);
        if (at == std::string::npos) {
          const size_t hold = partial_tag_suffix(buf_, kClose);
          reasoning.append(buf_, 0, buf_.size() - hold);
          buf_.erase(0, buf_.size() - hold);
          return;
        }
        reasoning.append(buf_, 0, at);
        buf_.erase(0, at + kClose.size());
        state_ = State::kAfterThink;
        continue;
      }
      case State::kAfterThink: {
        size_t i = 0;
        while (i < buf_.size() && is_space(buf_[i])) ++i;
        buf_.erase(0, i);
        if (buf_.empty()) return;
        state_ = State::kContent;
        continue;
      }
    }
  }
}

void ReasoningParser::finish(std::string& reasoning, std::string& content) {
  if (state_ == State::kReasoning)
    reasoning += buf_;
  else if (state_ != State::kAfterThink)
    content += buf_;
  buf_.clear();
}

}  // namespace ft::server
