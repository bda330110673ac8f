// ToolCallParser: cuts Qwen3-style <tool_call>{"name":..., "arguments":{...}}</tool_call> blocks out of content.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ft::server {

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text of the arguments (an object unless the model wrote something else)
};

struct ToolCallOptions {
  bool enabled = false;  // the request offered tools and tool_choice is not "none"
  // The prompt already opened a call for the model (tool_choice required / named): the output starts
  // inside a block whose text so far is `forced_body`.
  bool forced = false;
  std::string forced_body;
  std::string forced_name;  // named tool_choice: the call's name even when the output is cut short
};

// Content outside blocks passes through; "<tool_call>" split across pushes is held back. A complete block
// whose body is a JSON object with a string "name" becomes a ToolCall; any other block stays content,
// verbatim. Whitespace is held until non-space content follows; it is dropped before a call and at the end
// when calls were made.
class ToolCallParser {
 public:
  explicit ToolCallParser(ToolCallOptions options);
  void push(std::string_view text, std::string& content, std::vector<ToolCall>& calls);
  void finish(std::string& content, std::vector<ToolCall>& calls);
  int n_calls() const { return n_calls_; }

 private:
  bool take_block(const std::string& body, std::vector<ToolCall>& calls);

  ToolCallOptions options_;
  bool inside_ = false;
  std::string buf_;
  int n_calls_ = 0;
};

// Parses one block body; false when it is not a call.
bool parse_tool_call_body(std::string_view body, ToolCall& call);

}  // namespace ft::server
