// ServerState: what every route shares — the engine, tokenizer, chat template, phase, metrics, request log.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "freetoken/engine.h"
#include "server/metrics.h"
#include "server/request_log.h"
#include "server/server_options.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ft::server {

enum class Phase { kLoading, kReady, kFailed, kStopping };
const char* phase_name(Phase phase);

class ServerState {
 public:
  explicit ServerState(ServerOptions options);
  ~ServerState();

  // Loads the tokenizer, the chat template and the engine (the server already answers /health meanwhile).
  Status load();
  // Marks the server as stopping: running generations end with an error, new ones are refused.
  void begin_stop();
  void shutdown_engine();

  Phase phase() const { return phase_.load(); }
  bool ready() const { return phase() == Phase::kReady; }
  std::string load_step() const;  // what load() is doing now
  double seconds_since_start() const;
  const ServerOptions& options() const { return options_; }
  const std::string& model_name() const { return model_name_; }

  // Valid once ready().
  // True once the engine exists (ready, or stopping after having been ready); engine() needs it.
  bool has_engine() const { return has_engine_.load(std::memory_order_acquire); }
  Engine& engine() { return *engine_; }
  const Engine& engine() const { return *engine_; }
  const tok::Tokenizer& tokenizer() const { return *tokenizer_; }
  const tok::TokenizerChatConfig* chat() const { return chat_ ? &*chat_ : nullptr; }
  // Token ids that end a generation besides the engine's EOS ids (the tokenizer's eos token).
  const std::vector<int32_t>& stop_token_ids() const { return stop_ids_; }
  // Parsers chosen from the chat template (Qwen3-style tags).
  bool reasoning_parser() const { return reasoning_; }
  bool tool_call_parser() const { return tools_; }

  Metrics& metrics() { return metrics_; }
  RequestLog& requests() { return requests_; }
  // Generations being read by HTTP threads now.
  std::atomic<int>& active_generations() { return active_; }

 private:
  void set_step(std::string step);

  ServerOptions options_;
  std::string model_name_;
  std::atomic<Phase> phase_{Phase::kLoading};
  mutable std::mutex step_mutex_;
  std::string step_ = "starting";
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::unique_ptr<Engine> engine_;
  std::atomic<bool> has_engine_{false};  // set after engine_ (release), read before using it (acquire)
  std::unique_ptr<tok::Tokenizer> tokenizer_;
  std::optional<tok::TokenizerChatConfig> chat_;
  std::vector<int32_t> stop_ids_;
  bool reasoning_ = false;
  bool tools_ = false;
  Metrics metrics_;
  RequestLog requests_;
  std::atomic<int> active_{0};
};

}  // namespace ft::server
