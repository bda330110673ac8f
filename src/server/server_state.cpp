// ServerState: loading (tokenizer, chat template, engine) and the phase machine.
#include "server/server_state.h"

#include <filesystem>

#include "core/mapped_file.h"

namespace ft::server {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kLoading: return "loading";
    case Phase::kReady: return "ok";
    case Phase::kFailed: return "failed";
    case Phase::kStopping: return "stopping";
  }
  return "";
}

ServerState::ServerState(ServerOptions options) : options_(std::move(options)) {
  model_name_ = options_.served_model_name;
  if (model_name_.empty()) {
    std::filesystem::path p(options_.engine.model_dir);
    if (p.filename().empty()) p = p.parent_path();
    model_name_ = p.filename().string();
  }
}

ServerState::~ServerState() { shutdown_engine(); }

void ServerState::set_step(std::string step) {
  std::lock_guard<std::mutex> lock(step_mutex_);
  step_ = std::move(step);
}

std::string ServerState::load_step() const {
  std::lock_guard<std::mutex> lock(step_mutex_);
  return step_;
}

double ServerState::seconds_since_start() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

Status ServerState::load() {
  const std::string tok_dir = options_.tokenizer_dir.empty() ? options_.engine.model_dir : options_.tokenizer_dir;
  set_step("loading tokenizer");
  auto tok = tok::Tokenizer::load(tok_dir);
  if (!tok.ok()) {
    phase_ = Phase::kFailed;
    return tok.status();
  }
  tokenizer_ = std::move(tok).value();
  if (tokenizer_->config().eos_id) stop_ids_.push_back(*tokenizer_->config().eos_id);

  set_step("loading chat template");
  auto chat = tok::load_chat_config(tok_dir);
  if (chat.ok()) chat_ = std::move(chat).value();
  if (!options_.chat_template_file.empty()) {
    auto text = read_text_file(options_.chat_template_file);
    if (!text.ok()) {
      phase_ = Phase::kFailed;
      return text.status();
    }
    auto tmpl = tok::ChatTemplate::parse(*text);
    if (!tmpl.ok()) {
      phase_ = Phase::kFailed;
      return tmpl.status();
    }
    if (!chat_) chat_.emplace(tok::TokenizerChatConfig{std::move(tmpl).value(), {}});
    else chat_->chat_template = std::move(tmpl).value();
  }
  if (chat_) {
    const std::string& src = chat_->chat_template.source();
    reasoning_ = options_.reasoning_parser != "off" && src.find("<think>") != std::string::npos;
    tools_ = options_.tool_call_parser != "off" && src.find("<tool_call>") != std::string::npos;
  }

  set_step("loading model");
  auto engine = Engine::create(options_.engine);
  if (!engine.ok()) {
    phase_ = Phase::kFailed;
    set_step("failed: " + engine.status().message());
    return engine.status();
  }
  engine_ = std::move(engine).value();
  has_engine_.store(true, std::memory_order_release);
  set_step("ready");
  Phase expected = Phase::kLoading;
  phase_.compare_exchange_strong(expected, Phase::kReady);
  return ok_status();
}

void ServerState::begin_stop() { phase_ = Phase::kStopping; }

void ServerState::shutdown_engine() {
  if (engine_) engine_->shutdown();
}

}  // namespace ft::server
