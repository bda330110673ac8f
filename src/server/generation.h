// Generation: one submitted request read on its HTTP thread — detokenized with stop strings (TextStream),
// parsed into reasoning / content / tool calls, with disconnects and server shutdown turned into aborts.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sched/text_stream.h"
#include "server/api_error.h"
#include "server/output_parser.h"
#include "server/server_state.h"

namespace ft::server {

struct GenerationSpec {
  GenerateRequest request;
  std::vector<std::string> stop_strings;
  OutputParserOptions parse;
  std::string endpoint;
  std::string model;
  bool stream = false;
};

struct TokenInfo {
  std::string text;
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;
};

// What one choice produced since the last read.
struct ChoiceDelta {
  int32_t choice = 0;
  ParsedOutput out;
  std::vector<TokenInfo> tokens;  // with logprobs requested
  bool finished = false;
  std::string finish_reason;  // "stop", "length" or "tool_calls" (a stop that produced tool calls)
  std::string stop_sequence;  // the stop string that matched, if one did
};

class Generation {
 public:
  // Submits the request; throws RequestError when the engine refuses it (e.g. a prompt over the context).
  Generation(ServerState& state, GenerationSpec spec);
  ~Generation();  // aborts the request if it is still running, records it
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // Blocks until a choice has something new; `alive` is polled while waiting. False once every choice has
  // finished, or on an error (error() then says which: a disconnect, a stopping server, an engine error).
  bool next(ChoiceDelta& delta, const std::function<bool()>& alive);
  const std::optional<ApiError>& error() const { return error_; }

  int32_t n_choices() const { return static_cast<int32_t>(choices_.size()); }
  int32_t prompt_tokens() const { return prompt_tokens_; }
  int32_t completion_tokens() const { return completion_tokens_; }

 private:
  struct ChoiceState {
    std::unique_ptr<TextStream> text;
    std::unique_ptr<OutputParser> parser;
    bool done = false;
  };
  void fail(ApiError error, const std::string& state);
  TokenInfo token_info(const TokenEvent& e) const;
  void finish_all_if_done();

  ServerState& state_;
  GenerationSpec spec_;
  std::shared_ptr<RequestStream> stream_;
  std::vector<ChoiceState> choices_;
  int32_t open_choices_ = 0;
  bool engine_done_ = false;
  std::optional<ApiError> error_;
  int32_t prompt_tokens_ = 0;
  int32_t completion_tokens_ = 0;
  uint64_t log_seq_ = 0;
  RequestRecord record_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_check_ = start_;
};

}  // namespace ft::server
