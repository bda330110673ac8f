// OutputParser: one choice's generated text -> reasoning, content and tool calls (reasoning parser first).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/reasoning_parser.h"
#include "server/tool_call_parser.h"

namespace ft::server {

struct OutputParserOptions {
  ReasoningOptions reasoning;
  ToolCallOptions tools;
};

struct ParsedOutput {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> calls;
  bool empty() const { return reasoning.empty() && content.empty() && calls.empty(); }
};

class OutputParser {
 public:
  explicit OutputParser(const OutputParserOptions& options);
  ParsedOutput push(std::string_view text);
  ParsedOutput finish();
  int n_calls() const { return tools_.n_calls(); }

 private:
  ReasoningParser reasoning_;
  ToolCallParser tools_;
};

}  // namespace ft::server
