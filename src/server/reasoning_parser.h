// ReasoningParser: splits generated text at <think>...</think> into reasoning and content, incrementally.
#pragma once

#include <string>
#include <string_view>

namespace ft::server {

struct ReasoningOptions {
  bool enabled = false;       // off: every byte is content (enable_thinking false, or a family without it)
  bool start_inside = false;  // the prompt already opened <think> (the template did), so output starts in it
};

// The output may open with "<think>" (after whitespace) or, with start_inside, already be in the block;
// "</think>" ends it and the newlines after it are dropped. A tag split across pushes is held back, never
// leaked. An unterminated block is reasoning.
class ReasoningParser {
 public:
  explicit ReasoningParser(ReasoningOptions options);
  void push(std::string_view text, std::string& reasoning, std::string& content);
  void finish(std::string& reasoning, std::string& content);

 private:
  enum class State { kStart, kReasoning, kAfterThink, kContent };
  State state_;
  std::string buf_;
};

}  // namespace ft::server
