// Chat prompts: OpenAI-shaped messages and tools -> the model's chat template -> prompt token ids, plus the
// parser settings the rendered prompt implies (an opened <think>, a forced tool call).
#pragma once

#include <string>
#include <vector>

#include "server/json_fields.h"
#include "server/output_parser.h"
#include "server/server_state.h"

namespace ft::server {

enum class ToolChoice { kAuto, kNone, kRequired, kNamed };

struct ChatInput {
  Json messages = Json::array();  // OpenAI chat messages (validated by validate_openai_messages)
  Json tools;                     // OpenAI tools array, or null
  ToolChoice tool_choice = ToolChoice::kAuto;
  std::string tool_name;          // with kNamed
  Json template_kwargs = Json::object();  // enable_thinking, ...
};

struct ChatPrompt {
  std::vector<int32_t> ids;
  OutputParserOptions parse;
};

// Renders and tokenizes; throws RequestError (400) when the template refuses the conversation.
ChatPrompt build_chat_prompt(const ServerState& state, const ChatInput& input);

// Checks OpenAI chat messages (roles, content types, tool calls, image parts against the media rules) and
// returns them ready for the template: "developer" becomes "system". Throws RequestError naming the message.
Json validate_openai_messages(const ServerState& state, const Json& messages);
// Checks an OpenAI tools array ([{type:"function", function:{name, description?, parameters?}}]).
void validate_openai_tools(const Json& tools);
// Refuses an image reference: checked against the media rules first, then refused because the served
// model takes text only.
[[noreturn]] void refuse_image(const ServerState& state, const std::string& url, const std::string& where);

}  // namespace ft::server
