// OpenAI request bodies (chat completions, completions, responses) -> typed generation specs.
#pragma once

#include <string>
#include <vector>

#include "server/generation.h"
#include "server/json_fields.h"

namespace ft::server {

struct OpenAIJob {
  GenerationSpec spec;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;  // chat: the `logprobs` flag; completions: `logprobs` >= 0
};

// Sampling fields shared by every OpenAI route: temperature, top_p, top_k, min_p, repetition_penalty,
// presence_penalty, frequency_penalty, seed, n, ignore_eos, logit_bias (refused unless empty).
void parse_openai_sampling(const Json& body, GenerateRequest& request);
// `stop`: a string or an array of up to 16 non-empty strings.
std::vector<std::string> parse_stop_strings(const Json& body, const char* key);
// The output budget: `key` when given (>= 1), else what the context leaves, capped by --max-output-tokens.
int32_t parse_max_tokens(const ServerState& state, const Json& body, std::initializer_list<const char*> keys,
                         size_t prompt_tokens);

OpenAIJob parse_chat_request(const ServerState& state, const Json& body);
// One spec per prompt of `prompt` (a string, an array of strings, a token array or an array of those).
std::vector<OpenAIJob> parse_completion_request(const ServerState& state, const Json& body);
OpenAIJob parse_responses_request(const ServerState& state, const Json& body);

}  // namespace ft::server
