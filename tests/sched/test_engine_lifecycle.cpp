// Request lifecycle on the CPU engine: validation errors, stop tokens, max_tokens, aborts in every state,
// and a randomised mix of finishes, aborts, forks and preemptions after which the KV pool is empty
// (a double free would abort the process through FT_CHECK).
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "engine_harness.h"

namespace ft {
namespace {

using test::collect;
using test::greedy_request;
using test::random_prompt;

TEST(EngineLifecycle, InvalidRequestsAreRefusedWithACode) {
  auto engine = test::make_engine(2, 64);
  auto expect_invalid = [&](GenerateRequest r, const char* what) {
    auto s = engine->submit(std::move(r));
    ASSERT_FALSE(s.ok()) << what;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidRequest) << what;
  };
  expect_invalid(greedy_request({}, 4), "empty prompt");
  expect_invalid(greedy_request(random_prompt(1, 256, 512), 4), "prompt as long as the context");
  expect_invalid(greedy_request({1, 2, 512}, 4), "token out of vocabulary");
  expect_invalid(greedy_request({1, 2}, 0), "max_tokens 0");
  GenerateRequest r = greedy_request({1, 2}, 4);
  r.n = 17;
  expect_invalid(r, "n too large");
  r = greedy_request({1, 2}, 4);
  r.sampling.top_p = 0.0f;
  expect_invalid(r, "top_p 0");
  r = greedy_request({1, 2}, 4);
  r.sampling.temperature = -1.0f;
  expect_invalid(r, "negative temperature");
  r = greedy_request({1, 2}, 4);
  r.sampling.logprobs = 21;
  expect_invalid(r, "too many logprobs");
}

TEST(EngineLifecycle, StopTokenEndsTheChoiceWithStop) {
  auto engine = test::make_engine(2, 64);
  auto prompt = random_prompt(4, 12, 512);
  auto free_run = collect(**engine->submit(greedy_request(prompt, 8)), 1);
  ASSERT_EQ(free_run.choices[0].tokens.size(), 8u);
  GenerateRequest r = greedy_request(prompt, 8);
  r.stop_token_ids = {free_run.choices[0].tokens[3]};
  auto stopped = collect(**engine->submit(r), 1);
  // Ends at the first occurrence of the stop token, which is included as the last token.
  const auto& want = free_run.choices[0].tokens;
  const size_t first = static_cast<size_t>(std::find(want.begin(), want.end(), want[3]) - want.begin());
  EXPECT_EQ(stopped.choices[0].tokens, std::vector<int32_t>(want.begin(), want.begin() + first + 1));
  EXPECT_EQ(stopped.choices[0].finish, FinishReason::kStop);
  EXPECT_EQ(free_run.choices[0].finish, FinishReason::kLength);
  EXPECT_EQ(stopped.usage.completion_tokens, static_cast<int32_t>(first + 1));
  EXPECT_EQ(stopped.usage.prompt_tokens, 12);
}

TEST(EngineLifecycle, GenerationStopsAtTheContextLength) {
  auto engine = test::make_engine(1, 512);
  auto out = collect(**engine->submit(greedy_request(random_prompt(2, 250, 512), 100)), 1);
  EXPECT_EQ(out.choices[0].tokens.size(), 6u);  // 250 + 6 = the context of 256
  EXPECT_EQ(out.choices[0].finish, FinishReason::kLength);
}

TEST(EngineLifecycle, AbortWhileQueuedAndWhileDecoding) {
  // 4000 tokens take the tiny model a few hundred ms, so the abort lands while the first request decodes even where
  // a loaded machine holds this thread up between its first token and the abort (200 tokens, a few ms, did not).
  EngineOptions o = test::engine_options("qwen3_moe", 1, 16, 0);
  o.context_length = 4096;
  auto created = Engine::create(o);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  auto engine = std::move(created).value();
  constexpr int32_t kMaxTokens = 4000;
  auto running = *engine->submit(greedy_request(random_prompt(5, 40, 512), kMaxTokens));
  auto queued = *engine->submit(greedy_request(random_prompt(6, 40, 512), kMaxTokens));
  TokenEvent e;
  ASSERT_TRUE(running->next(e));  // decoding now
  engine->abort(queued->id());
  engine->abort(running->id());
  auto rest_running = collect(*running, 1);
  auto rest_queued = collect(*queued, 1);
  EXPECT_EQ(rest_running.choices[0].finish, FinishReason::kAborted);
  EXPECT_EQ(rest_queued.choices[0].finish, FinishReason::kAborted);
  EXPECT_LT(rest_running.choices[0].tokens.size(), static_cast<size_t>(kMaxTokens - 1));
  test::expect_drained(*engine);
}

TEST(EngineLifecycle, StopChoiceEndsOneChoiceAndFreesIt) {
  auto engine = test::make_engine(2, 64);
  GenerateRequest r = greedy_request(random_prompt(12, 20, 512), 150);
  r.n = 3;
  r.sampling.temperature = 0.8f;
  r.sampling.seed = 3;
  auto s = *engine->submit(r);
  engine->stop_choice(s->id() + 1000, 0);  // unknown ids are ignored
  test::RequestOutput out;
  out.choices.resize(3);
  bool stopped = false;
  TokenEvent e;
  while (s->next(e)) {
    auto& c = out.choices.at(static_cast<size_t>(e.choice));
    if (e.has_token) c.tokens.push_back(e.token);
    if (e.finish != FinishReason::kNone) {
      EXPECT_EQ(c.finish, FinishReason::kNone) << "choice " << e.choice << " finished twice";
      c.finish = e.finish;
    }
    if (!stopped && e.choice == 1 && e.has_token) {
      engine->stop_choice(s->id(), 1);
      stopped = true;
    }
  }
  EXPECT_EQ(out.choices[1].finish, FinishReason::kStop);
  EXPECT_LT(out.choices[1].tokens.size(), 150u);
  for (int c : {0, 2}) {
    EXPECT_EQ(out.choices[static_cast<size_t>(c)].finish, FinishReason::kLength) << c;
    EXPECT_EQ(out.choices[static_cast<size_t>(c)].tokens.size(), 150u) << c;
  }
  test::expect_drained(*engine);
}

TEST(EngineLifecycle, RandomMixLeavesNoPageBehind) {
  // A small pool (preemptions), forks, random aborts at random times, random lengths.
  auto engine = test::make_engine(6, 24, 20);
  std::mt19937 rng(2024);
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<int32_t> n_choices;
  for (int i = 0; i < 40; ++i) {
    GenerateRequest r = greedy_request(random_prompt(300 + i, 1 + static_cast<int32_t>(rng() % 70), 512),
                                       1 + static_cast<int32_t>(rng() % 50));
    if (rng() % 3 == 0) r.sampling.temperature = 0.8f;
    if (rng() % 4 == 0) r.n = 1 + static_cast<int32_t>(rng() % 3);
    auto s = engine->submit(r);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    streams.push_back(*s);
    n_choices.push_back(r.n);
    if (rng() % 3 == 0) engine->abort(streams[rng() % streams.size()]->id());
    if (rng() % 5 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 20));
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    auto out = collect(*streams[i], n_choices[i]);
    for (const auto& c : out.choices) EXPECT_NE(c.finish, FinishReason::kNone) << i;
  }
  test::expect_drained(*engine);
}

TEST(EngineLifecycle, PreemptedForkThatCannotRecomputeEndsWithAnError) {
  // 16 pages. A (n = 2, 150-token prompt) shares 9 prompt pages between its choices; B (older, 40 + 100
  // tokens) preempts it. Recomputed without sharing, A's two sequences need 2 x 11 pages: alone, it can
  // never run again, so it must end with an error instead of waiting for pages forever.
  auto engine = test::make_engine(2, 16, 16);
  auto b = *engine->submit(greedy_request(random_prompt(11, 40, 512), 100));
  GenerateRequest ra = greedy_request(random_prompt(12, 150, 512), 40);
  ra.n = 2;
  auto a = *engine->submit(ra);
  std::vector<FinishReason> finish(2, FinishReason::kNone);
  TokenEvent e;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool timed_out = false;
  while (std::chrono::steady_clock::now() < deadline && (a->next_for(e, 100, timed_out) || timed_out))
    if (!timed_out && e.finish != FinishReason::kNone) finish.at(static_cast<size_t>(e.choice)) = e.finish;
  for (FinishReason f : finish) EXPECT_TRUE(f == FinishReason::kError || f == FinishReason::kLength);
  EXPECT_EQ(collect(*b, 1).choices[0].finish, FinishReason::kLength);
  EXPECT_GT(engine->stats().preemptions, 0);
  test::expect_drained(*engine);
}

TEST(EngineLifecycle, ShutdownEndsRunningStreams) {
  // One request runs and two wait behind it (one runs at a time). After the first token, shutdown must end every
  // stream. A request may still end complete where the engine outran the shutdown call (the first one takes a few ms
  // on the tiny model); the last one needs 400 steps more than the first, so it is aborted.
  auto engine = test::make_engine(1, 16);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (uint32_t i = 0; i < 3; ++i)
    streams.push_back(*engine->submit(greedy_request(random_prompt(8 + i, 30, 512), 200)));
  TokenEvent e;
  ASSERT_TRUE(streams[0]->next(e));
  engine->shutdown();
  for (size_t i = 0; i < streams.size(); ++i) {
    const test::ChoiceOutput c = collect(*streams[i], 1).choices[0];
    const size_t complete = i == 0 ? 199 : 200;  // the first one's first token was read above
    if (i + 1 == streams.size() || c.finish != FinishReason::kLength || c.tokens.size() != complete) {
      EXPECT_EQ(c.finish, FinishReason::kAborted) << "request " << i;
    }
  }
}

}  // namespace
}  // namespace ft
