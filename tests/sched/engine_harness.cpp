// Engine test helpers.
#include "engine_harness.h"

#include <chrono>
#include <random>
#include <thread>

#include <gtest/gtest.h>

namespace ft::test {

EngineOptions engine_options(const std::string& model, int32_t max_running, int32_t max_prefill_length,
                             int64_t num_pages) {
  EngineOptions o;
  o.model_dir = std::string(FT_TEST_DATA) + "/models/" + model;
  o.device = "cpu";
  o.n_threads = 2;
  o.max_running_requests = max_running;
  o.max_prefill_length = max_prefill_length;
  o.page_size = 16;
  o.context_length = 256;
  o.num_pages = num_pages;
  o.memory_budget = 1ull << 30;
  o.show_progress = false;
  return o;
}

std::unique_ptr<Engine> make_engine(int32_t max_running, int32_t max_prefill_length, int64_t num_pages,
                                    const std::string& model) {
  auto e = Engine::create(engine_options(model, max_running, max_prefill_length, num_pages));
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return std::move(e).value();
}

void expect_drained(Engine& engine) {
  // The streams end when their last token is out; the engine publishes the step's stats just after.
  auto busy = [](const EngineStats& s) {
    return s.kv_pages_used != 0 || s.running != 0 || s.queued != 0 || s.state_slots_used != 0;
  };
  for (int i = 0; i < 300 && busy(engine.stats()); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.kv_pages_used, 0);
  EXPECT_EQ(s.state_slots_used, 0);
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.queued, 0);
}

RequestOutput collect(RequestStream& stream, int32_t n_choices) {
  RequestOutput out;
  out.choices.resize(static_cast<size_t>(n_choices));
  TokenEvent e;
  while (stream.next(e)) {
    auto& c = out.choices.at(static_cast<size_t>(e.choice));
    if (e.has_token) {
      c.tokens.push_back(e.token);
      c.top.push_back(e.top);
    }
    if (e.finish != FinishReason::kNone) {
      EXPECT_EQ(c.finish, FinishReason::kNone) << "choice finished twice";
      c.finish = e.finish;
      EXPECT_TRUE(e.finish != FinishReason::kError) << e.error.to_string();
    }
    out.usage = e.usage;
  }
  return out;
}

GenerateRequest greedy_request(std::vector<int32_t> prompt, int32_t max_tokens, int32_t logprobs) {
  GenerateRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.0f;
  r.sampling.logprobs = logprobs;
  r.ignore_eos = true;
  return r;
}

std::vector<int32_t> random_prompt(uint32_t seed, int32_t length, int32_t vocab) {
  std::mt19937 rng(seed);
  std::vector<int32_t> p(static_cast<size_t>(length));
  for (auto& t : p) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
  return p;
}

}  // namespace ft::test
