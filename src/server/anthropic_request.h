// Anthropic Messages request bodies -> the OpenAI-shaped chat input the template renders, and a spec.
#pragma once

#include "server/chat_prompt.h"
#include "server/generation.h"

namespace ft::server {

struct AnthropicJob {
  GenerationSpec spec;
  bool stream = false;
  bool thinking = false;  // thinking blocks were asked for
};

// Converts system, messages (text, image, tool_use, tool_result, thinking blocks), tools, tool_choice and
// thinking into a ChatInput; throws RequestError naming the field.
ChatInput anthropic_chat_input(const ServerState& state, const Json& body);
AnthropicJob parse_messages_request(const ServerState& state, const Json& body);
// Prompt tokens of a count_tokens body (the same conversion and template as a message).
int32_t count_message_tokens(const ServerState& state, const Json& body);

}  // namespace ft::server
