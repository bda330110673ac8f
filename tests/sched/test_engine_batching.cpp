// The engine's scheduling must not change results: batched, chunked, preempted and forked requests give
// the tokens (and top-20 logprobs within relative L2 1e-5) of each request run alone; greedy output
// matches the float64 transformers reference's greedy continuation; the KV pool (and, for the Gated DeltaNet
// model, the recurrent-state pool) ends empty.
#include <algorithm>
#include <cmath>
#include <thread>

#include <gtest/gtest.h>

#include "engine_harness.h"
#include "io/safetensors.h"

namespace ft {
namespace {

using test::collect;
using test::greedy_request;
using test::random_prompt;

constexpr int32_t kVocab = 512;


test::RequestOutput run_alone(const GenerateRequest& r, const std::string& model = "qwen3_moe") {
  auto engine = test::make_engine(1, 8192, 0, model);
  auto s = engine->submit(r);
  EXPECT_TRUE(s.ok());
  return collect(**s, r.n);
}

double top_rel_l2(const std::vector<TokenLogprob>& a, const std::vector<TokenLogprob>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    num += std::pow(a[i].logprob - b[i].logprob, 2);
    den += std::pow(b[i].logprob, 2);
  }
  return std::sqrt(num / den);
}

void expect_same(const test::RequestOutput& got, const test::RequestOutput& want, const std::string& what) {
  ASSERT_EQ(got.choices.size(), want.choices.size()) << what;
  for (size_t c = 0; c < want.choices.size(); ++c) {
    EXPECT_EQ(got.choices[c].tokens, want.choices[c].tokens) << what << " choice " << c;
    for (size_t t = 0; t < std::min(got.choices[c].top.size(), want.choices[c].top.size()); ++t) {
      if (want.choices[c].top[t].empty()) continue;
      EXPECT_LT(top_rel_l2(got.choices[c].top[t], want.choices[c].top[t]), 1e-5) << what << " token " << t;
    }
  }
}

struct Workload {
  std::vector<GenerateRequest> requests;
  std::vector<test::RequestOutput> alone;
};

Workload make_workload(int n, uint32_t seed, int32_t max_tokens, const std::string& model = "qwen3_moe") {
  Workload w;
  for (int i = 0; i < n; ++i) {
    const int32_t len = 3 + static_cast<int32_t>((seed * 7 + static_cast<uint32_t>(i) * 13) % 60);
    w.requests.push_back(greedy_request(random_prompt(seed + static_cast<uint32_t>(i), len, kVocab), max_tokens, 20));
  }
  for (const auto& r : w.requests) w.alone.push_back(run_alone(r, model));
  return w;
}

// Submits every request (half of them after the first tokens of the others), reads all streams.
std::vector<test::RequestOutput> run_concurrently(Engine& engine, const std::vector<GenerateRequest>& reqs) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (i == reqs.size() / 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto s = engine.submit(reqs[i]);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    streams.push_back(*s);
  }
  std::vector<test::RequestOutput> out(reqs.size());
  std::vector<std::thread> readers;
  for (size_t i = 0; i < reqs.size(); ++i)
    readers.emplace_back([&, i] { out[i] = collect(*streams[i], reqs[i].n); });
  for (auto& t : readers) t.join();
  return out;
}

TEST(EngineBatching, SixteenConcurrentEqualAlone) {
  Workload w = make_workload(16, 11, 12);
  for (int32_t prefill : {7, 5, 8192}) {
    auto engine = test::make_engine(16, prefill);
    auto got = run_concurrently(*engine, w.requests);
    for (size_t i = 0; i < got.size(); ++i)
      expect_same(got[i], w.alone[i], "prefill " + std::to_string(prefill) + " request " + std::to_string(i));
    test::expect_drained(*engine);
  }
}

// Under a 4096-token context the attention reads the first 4 to 8 columns of page-table rows 256 pages wide.
TEST(EngineBatching, ConcurrentUnderALongContextEqualAlone) {
  Workload w = make_workload(8, 23, 12);
  EngineOptions o = test::engine_options("qwen3_moe", 8, 8192);
  o.context_length = 4096;
  auto engine = Engine::create(o);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  auto got = run_concurrently(**engine, w.requests);
  for (size_t i = 0; i < got.size(); ++i) expect_same(got[i], w.alone[i], "request " + std::to_string(i));
  test::expect_drained(**engine);
}

TEST(EngineBatching, PreemptionByRecomputeKeepsResults) {
  // 8 requests of 4..56 + 100 tokens share 16 pages (256 tokens): any three of them overflow it, so decode runs
  // out of pages however the requests' admissions interleave.
  Workload w = make_workload(8, 5, 100);
  auto engine = test::make_engine(8, 64, 16);
  auto got = run_concurrently(*engine, w.requests);
  for (size_t i = 0; i < got.size(); ++i) expect_same(got[i], w.alone[i], "request " + std::to_string(i));
  EXPECT_GT(engine->stats().preemptions, 0);
  test::expect_drained(*engine);
}

TEST(EngineBatching, GreedyMatchesTransformersReference) {
  auto file = SafetensorsFile::open(std::string(FT_TEST_DATA) + "/models/qwen3_moe/reference.safetensors");
  ASSERT_TRUE(file.ok());
  auto engine = test::make_engine(4, 8192);
  for (int p = 0; p < 3; ++p) {
    const std::string k = "prompt" + std::to_string(p) + ".";
    const TensorInfo* ids = (*file)->find(k + "input_ids");
    const TensorInfo* greedy = (*file)->find(k + "greedy_ids");
    const auto* idp = reinterpret_cast<const int64_t*>((*file)->tensor_data(*ids));
    const auto* gp = reinterpret_cast<const int64_t*>((*file)->tensor_data(*greedy));
    std::vector<int32_t> prompt(idp, idp + ids->shape[0]);
    auto s = engine->submit(greedy_request(prompt, static_cast<int32_t>(greedy->shape[0]), 2));
    ASSERT_TRUE(s.ok());
    auto out = collect(**s, 1);
    // Compare up to the first step whose top-2 margin is under 1e-2 (a near-tie the reference may break
    // either way).
    for (size_t i = 0; i < out.choices[0].tokens.size(); ++i) {
      const auto& top = out.choices[0].top[i];
      if (top[0].logprob - top[1].logprob < 1e-2) break;
      EXPECT_EQ(out.choices[0].tokens[i], gp[i]) << "prompt " << p << " step " << i;
    }
  }
}

TEST(EngineBatching, ForkedChoicesShareThePrompt) {
  // n = 3 greedy choices all equal the single greedy continuation; seeded sampled choice i equals a
  // single request with seed + i (choices share the prompt's pages, including a copied partial page).
  auto prompt = random_prompt(3, 37, kVocab);
  GenerateRequest g = greedy_request(prompt, 10);
  auto single = run_alone(g);
  g.n = 3;
  auto forked = run_alone(g);
  for (const auto& c : forked.choices) EXPECT_EQ(c.tokens, single.choices[0].tokens);

  GenerateRequest s = g;
  s.sampling.temperature = 1.0f;
  s.sampling.seed = 100;
  auto multi = run_alone(s);
  for (int32_t i = 0; i < 3; ++i) {
    GenerateRequest one = s;
    one.n = 1;
    one.sampling.seed = 100 + static_cast<uint64_t>(i);
    EXPECT_EQ(multi.choices[static_cast<size_t>(i)].tokens, run_alone(one).choices[0].tokens) << "choice " << i;
  }
}

TEST(EngineBatching, ForkThatPreemptsARequestSampledInTheSameStep) {
  // 16 pages (256 tokens). A (n = 2, 200-token prompt: 13 pages, the last partly filled) ends its prefill in
  // the step that admits B (48 tokens: the last 3 pages). Sampling A forks it, which needs a page for the
  // copy of its partial page, so B (sampled later in the same step) is preempted: its logits of that step
  // must not end it while it waits in the queue.
  GenerateRequest a = greedy_request(random_prompt(31, 200, kVocab), 3);
  GenerateRequest b = greedy_request(random_prompt(32, 48, kVocab), 1);
  auto a_alone = run_alone(a);
  auto b_alone = run_alone(b);
  a.n = 2;
  auto engine = test::make_engine(2, 128, 16);
  auto sa = engine->submit(a);
  auto sb = engine->submit(b);  // at once: queued before A's second chunk is planned
  ASSERT_TRUE(sa.ok() && sb.ok());
  auto got_b = collect(**sb, 1);
  auto got_a = collect(**sa, 2);
  for (const auto& c : got_a.choices) EXPECT_EQ(c.tokens, a_alone.choices[0].tokens);
  EXPECT_EQ(got_b.choices[0].tokens, b_alone.choices[0].tokens);
  EXPECT_GT(engine->stats().preemptions, 0);
  test::expect_drained(*engine);
}

TEST(EngineBatching, SeededSamplingIgnoresOtherTraffic) {
  GenerateRequest r = greedy_request(random_prompt(9, 20, kVocab), 16);
  r.sampling.temperature = 0.9f;
  r.sampling.top_p = 0.95f;
  r.sampling.seed = 1234;
  auto alone = run_alone(r);
  auto engine = test::make_engine(8, 16);
  std::vector<GenerateRequest> load;
  for (int i = 0; i < 5; ++i) load.push_back(greedy_request(random_prompt(50 + i, 30, kVocab), 20));
  load.insert(load.begin() + 2, r);
  auto got = run_concurrently(*engine, load);
  EXPECT_EQ(got[2].choices[0].tokens, alone.choices[0].tokens);
}

TEST(EngineBatching, SixtyFourConcurrentFinishAndFreeEverything) {
  auto engine = test::make_engine(16, 256);
  std::vector<GenerateRequest> reqs;
  for (int i = 0; i < 64; ++i) {
    GenerateRequest r = greedy_request(random_prompt(200 + i, 5 + i % 40, kVocab), 4 + i % 9);
    if (i % 3 == 0) r.sampling.temperature = 0.7f;
    if (i % 7 == 0) r.n = 2;
    reqs.push_back(r);
  }
  auto got = run_concurrently(*engine, reqs);
  for (size_t i = 0; i < got.size(); ++i)
    for (const auto& c : got[i].choices) {
      EXPECT_EQ(c.finish, FinishReason::kLength) << i;
      EXPECT_EQ(static_cast<int32_t>(c.tokens.size()), reqs[i].max_tokens) << i;
    }
  test::expect_drained(*engine);
  EXPECT_EQ(engine->stats().running, 0);
}

// Qwen3.5 MoE (Gated DeltaNet): each sequence's recurrent state rides in its state slot across prefill chunks,
// is recomputed from the tokens after preemption, and is copied into forked choices.
TEST(EngineBatchingQwen35, ConcurrentChunkedEqualAlone) {
  Workload w = make_workload(8, 21, 10, "qwen3_5_moe");
  for (int32_t prefill : {5, 64}) {
    auto engine = test::make_engine(8, prefill, 0, "qwen3_5_moe");
    auto got = run_concurrently(*engine, w.requests);
    for (size_t i = 0; i < got.size(); ++i)
      expect_same(got[i], w.alone[i], "prefill " + std::to_string(prefill) + " request " + std::to_string(i));
    test::expect_drained(*engine);
  }
}

TEST(EngineBatchingQwen35, PreemptionByRecomputeKeepsResults) {
  // 8 requests of 4..56 + 100 tokens share 16 pages (256 tokens) of the full-attention layer: any three of them
  // overflow it, so decode preempts however the requests' admissions interleave.
  Workload w = make_workload(8, 5, 100, "qwen3_5_moe");
  auto engine = test::make_engine(8, 64, 16, "qwen3_5_moe");
  auto got = run_concurrently(*engine, w.requests);
  for (size_t i = 0; i < got.size(); ++i) expect_same(got[i], w.alone[i], "request " + std::to_string(i));
  EXPECT_GT(engine->stats().preemptions, 0);
  test::expect_drained(*engine);
}

TEST(EngineBatchingQwen35, ForkedChoicesCopyTheState) {
  GenerateRequest g = greedy_request(random_prompt(3, 37, kVocab), 10);
  auto single = run_alone(g, "qwen3_5_moe");
  g.n = 3;
  auto engine = test::make_engine(2, 8192, 0, "qwen3_5_moe");
  auto s = engine->submit(g);
  ASSERT_TRUE(s.ok());
  auto forked = collect(**s, g.n);
  for (const auto& c : forked.choices) EXPECT_EQ(c.tokens, single.choices[0].tokens);
  test::expect_drained(*engine);
}

}  // namespace
}  // namespace ft
