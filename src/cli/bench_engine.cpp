// ft bench engine: decode throughput as the serving engine delivers it (its step loop: scheduling, graph replay,
// the sample op and its copy back, events to the request streams), beside what `ft bench decode` measures of the
// forward pass alone. Requests go straight to the Engine API (no HTTP, no tokenizer).
#include "cli/bench_engine.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "cli/serve_flags.h"
#include "freetoken/engine.h"

namespace ft::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Timeline {
  std::vector<Clock::time_point> tokens;  // when the engine emitted each token
  FinishReason finish = FinishReason::kNone;
};

// Reads one stream to its end, keeping every token's emission time.
void drain(RequestStream& s, Timeline& t) {
  TokenEvent e;
  while (s.next(e)) {
    if (e.has_token) t.tokens.push_back(Clock::time_point(std::chrono::nanoseconds(e.emitted_ns)));
    if (e.finish != FinishReason::kNone) t.finish = e.finish;
  }
}

Result<std::vector<Timeline>> run_requests(Engine& engine, const std::vector<GenerateRequest>& requests) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const GenerateRequest& r : requests) {
    FT_ASSIGN_OR_RETURN(auto s, engine.submit(r));
    streams.push_back(std::move(s));
  }
  std::vector<Timeline> out(streams.size());
  std::vector<std::thread> readers;
  for (size_t i = 0; i < streams.size(); ++i) readers.emplace_back([&, i] { drain(*streams[i], out[i]); });
  for (auto& t : readers) t.join();
  for (const Timeline& t : out)
    if (t.finish != FinishReason::kLength) return internal_error("a benchmark request ended before its max_tokens");
  return out;
}

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

}  // namespace

Status bench_engine(const Args& a) {
  FT_ASSIGN_OR_RETURN(int64_t batch, a.integer("batch", 1, 4096));
  FT_ASSIGN_OR_RETURN(int64_t tokens, a.integer("tokens", 2, 1 << 24));
  FT_ASSIGN_OR_RETURN(int64_t prompt, a.integer("prompt", 1, 1 << 24));
  SamplingParams sp;
  FT_ASSIGN_OR_RETURN(double temperature, a.number("temperature"));
  FT_ASSIGN_OR_RETURN(int64_t top_k, a.integer("top-k", 0, INT32_MAX));
  FT_ASSIGN_OR_RETURN(double top_p, a.number("top-p"));
  FT_ASSIGN_OR_RETURN(double min_p, a.number("min-p"));
  FT_ASSIGN_OR_RETURN(int64_t logprobs, a.integer("logprobs", -1, INT32_MAX));
  sp.temperature = static_cast<float>(temperature);
  sp.top_k = static_cast<int32_t>(top_k);
  sp.top_p = static_cast<float>(top_p);
  sp.min_p = static_cast<float>(min_p);
  sp.logprobs = static_cast<int32_t>(logprobs);
  sp.seed = 1;

  FT_ASSIGN_OR_RETURN(EngineOptions o, engine_options(a));
  o.max_running_requests = std::max<int32_t>(o.max_running_requests, static_cast<int32_t>(batch));
  o.show_progress = false;
  FT_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(o));
  std::mt19937 rng(1);
  const auto request = [&](int32_t max_tokens) {
    GenerateRequest r;
    for (int64_t i = 0; i < prompt; ++i) r.prompt.push_back(static_cast<int32_t>(rng() % engine->vocab_size()));
    r.max_tokens = max_tokens;
    r.sampling = sp;
    r.ignore_eos = true;
    return r;
  };
  // Warm-up: the same shape for a few steps (captures the batch's graph, touches the sampler's buffers).
  std::vector<GenerateRequest> requests;
  for (int64_t i = 0; i < batch; ++i) requests.push_back(request(8));
  FT_RETURN_IF_ERROR(run_requests(*engine, requests).status());
  requests.clear();
  for (int64_t i = 0; i < batch; ++i) requests.push_back(request(static_cast<int32_t>(tokens)));
  const Clock::time_point submitted = Clock::now();
  FT_ASSIGN_OR_RETURN(std::vector<Timeline> runs, run_requests(*engine, requests));

  // The steady window: from the last request's first token to the last token; every token read after its start is
  // a decode step's. Stamps are the engine's (when a step's tokens went out), not the reader's, which may lag.
  Clock::time_point from = runs[0].tokens.front(), to = runs[0].tokens.back();
  for (const Timeline& t : runs) from = std::max(from, t.tokens.front()), to = std::max(to, t.tokens.back());
  int64_t in_window = 0;
  for (const Timeline& t : runs)
    for (const auto& at : t.tokens) in_window += at > from;
  std::vector<double> gaps;  // the first request's inter-token gaps inside the window, µs
  for (size_t i = 1; i < runs[0].tokens.size(); ++i)
    if (runs[0].tokens[i - 1] >= from) gaps.push_back(micros(runs[0].tokens[i] - runs[0].tokens[i - 1]));
  std::sort(gaps.begin(), gaps.end());
  const double window_us = micros(to - from);
  if (in_window < 1 || !(window_us > 0)) return invalid_argument("--tokens too few for a steady window");
  double ttft = 0;
  for (const Timeline& t : runs) ttft += micros(t.tokens.front() - submitted);
  ttft /= static_cast<double>(runs.size());
  const auto pct = [&](double q) {
    return gaps.empty() ? 0.0 : gaps[std::min(gaps.size() - 1, static_cast<size_t>(q * gaps.size()))];
  };
  std::printf(
      "engine decode, %lld request(s) of %lld prompt + %lld tokens, temperature %.2f top-k %d top-p %.2f "
      "min-p %.2f logprobs %d:\n",
      static_cast<long long>(batch), static_cast<long long>(prompt), static_cast<long long>(tokens), sp.temperature,
      sp.top_k, sp.top_p, sp.min_p, sp.logprobs);
  std::printf(
      "  %.1f tok/s (%lld tokens in %.3f ms), inter-token gap of request 0: median %.1f us, p90 %.1f, "
      "p99 %.1f; time to first token %.2f ms\n",
      1e6 * static_cast<double>(in_window) / window_us, static_cast<long long>(in_window), window_us / 1e3, pct(0.5),
      pct(0.9), pct(0.99), ttft / 1e3);
  return ok_status();
}

}  // namespace ft::cli
