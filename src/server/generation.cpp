// Generation: the HTTP thread's side of one request.
#include "server/generation.h"

#include <algorithm>

namespace ft::server {
namespace {
constexpr int64_t kPollMs = 50;  // how often a waiting reader checks its client and the server
int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

Generation::Generation(ServerState& state, GenerationSpec spec) : state_(state), spec_(std::move(spec)) {
  if (!state_.ready()) throw_error(503, state_.phase() == Phase::kStopping ? "the server is shutting down"
                                                                         : "the model is still loading");
  GenerateRequest req = spec_.request;
  if (!req.ignore_eos)
    req.stop_token_ids.insert(req.stop_token_ids.end(), state_.stop_token_ids().begin(),
                              state_.stop_token_ids().end());
  prompt_tokens_ = static_cast<int32_t>(req.prompt.size());
  auto stream = state_.engine().submit(std::move(req));
  if (!stream.ok()) throw RequestError(error_from_status(stream.status()));
  stream_ = std::move(stream).value();
  choices_.resize(static_cast<size_t>(spec_.request.n));
  for (auto& c : choices_) {
    c.text = std::make_unique<TextStream>(state_.tokenizer(), spec_.stop_strings, true);
    c.parser = std::make_unique<OutputParser>(spec_.parse);
  }
  open_choices_ = spec_.request.n;
  ++state_.active_generations();
  record_.endpoint = spec_.endpoint;
  record_.model = spec_.model;
  record_.stream = spec_.stream;
  record_.n_choices = spec_.request.n;
  record_.prompt_tokens = prompt_tokens_;
  record_.started_unix_ms = now_unix_ms();
  log_seq_ = state_.requests().begin(record_);
}

Generation::~Generation() {
  if (!engine_done_) state_.engine().abort(stream_->id());
  --state_.active_generations();
  if (open_choices_ > 0 && !error_) record_.state = "disconnected";  // the reader quit: a write to the client failed
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  record_.completion_tokens = completion_tokens_;
  record_.latency_ms = seconds * 1000;
  if (record_.state == "running") record_.state = "finished";
  state_.requests().end(log_seq_, record_);
  state_.metrics().count_generation(prompt_tokens_, completion_tokens_, seconds,
                                    record_.ttft_ms >= 0 ? record_.ttft_ms / 1000 : -1);
}

void Generation::fail(ApiError error, const std::string& state) {
  if (!engine_done_) state_.engine().abort(stream_->id());
  engine_done_ = true;
  record_.state = state;
  record_.error = error.message;
  error_ = std::move(error);
  open_choices_ = 0;
}

TokenInfo Generation::token_info(const TokenEvent& e) const {
  TokenInfo t;
  const auto& tok = state_.tokenizer();
  t.text = tok.decode(std::span<const int32_t>(&e.token, 1), false);
  t.logprob = e.logprob;
  for (const auto& alt : e.top) t.top.emplace_back(tok.decode(std::span<const int32_t>(&alt.token, 1), false), alt.logprob);
  return t;
}

bool Generation::next(ChoiceDelta& delta, const std::function<bool()>& alive) {
  for (;;) {
    if (open_choices_ == 0 || error_) return false;
    // The client and the server are checked every kPollMs, whether tokens flow or not.
    const auto now = std::chrono::steady_clock::now();
    if (now - last_check_ >= std::chrono::milliseconds(kPollMs)) {
      last_check_ = now;
      if (state_.phase() == Phase::kStopping) {
        fail({503, "the server is shutting down", "", ""}, "error");
        return false;
      }
      if (!alive()) {
        fail({499, "the client disconnected", "", ""}, "disconnected");
        return false;
      }
    }
    TokenEvent e;
    bool timed_out = false;
    if (!stream_->next_for(e, kPollMs, timed_out)) {
      if (!timed_out) {  // the engine closed the stream without finishing every choice we track
        fail({500, "the engine ended the request early", "", ""}, "error");
        return false;
      }
      continue;
    }
    ChoiceState& c = choices_.at(static_cast<size_t>(e.choice));
    if (c.done) continue;  // a choice cut by a stop string: tokens the engine made before it stopped are dropped
    delta = ChoiceDelta{};
    delta.choice = e.choice;
    std::string text;
    if (e.has_token) {
      ++completion_tokens_;
      if (record_.ttft_ms < 0)
        record_.ttft_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
      if (!e.stopped_by_token) text = c.text->push(e.token);
      if (spec_.request.sampling.logprobs >= 0) delta.tokens.push_back(token_info(e));
    }
    if (c.text->stopped()) {
      delta.finished = true;
      delta.finish_reason = "stop";
      delta.stop_sequence = c.text->matched_stop();
      // The engine stops generating this choice (the others, if any, run on).
      if (e.finish == FinishReason::kNone && !engine_done_) state_.engine().stop_choice(stream_->id(), e.choice);
    } else if (e.finish != FinishReason::kNone) {
      if (e.finish == FinishReason::kError) {
        fail({500, e.error.message().empty() ? "generation failed" : e.error.message(), "", ""}, "error");
        return false;
      }
      if (e.finish == FinishReason::kAborted) {
        fail({503, "the request was aborted (the server is shutting down)", "", ""}, "error");
        return false;
      }
      text += c.text->finish();
      delta.finished = true;
      delta.finish_reason = e.finish == FinishReason::kLength ? "length" : "stop";
    }
    delta.out = c.parser->push(text);
    if (delta.finished) {
      ParsedOutput rest = c.parser->finish();
      delta.out.reasoning += rest.reasoning;
      delta.out.content += rest.content;
      for (auto& call : rest.calls) delta.out.calls.push_back(std::move(call));
      if (c.parser->n_calls() > 0 && delta.finish_reason == "stop") delta.finish_reason = "tool_calls";
      c.done = true;
      --open_choices_;
      if (!record_.finish_reason.empty()) record_.finish_reason += ",";
      record_.finish_reason += delta.finish_reason;
      if (open_choices_ == 0) finish_all_if_done();
    }
    return true;
  }
}

void Generation::finish_all_if_done() {
  // Every choice has its answer; whatever the engine still runs (choices cut by stop strings) is aborted.
  if (!engine_done_) state_.engine().abort(stream_->id());
  engine_done_ = true;
}

}  // namespace ft::server
