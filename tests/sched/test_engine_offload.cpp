// The engine with routed experts in host memory (--moe-backend offload / cpu / hybrid, a cache of 8 slots for the 24
// experts of the fixture's 3 MoE layers: one layer's worth, the fewest a batch of decodes may need): each request
// alone gives the tokens and logprobs of the fused engine — bit for bit for offload (same
// kernels), within fp32 rounding for cpu and hybrid (experts summed on the CPU) — and the expert counters and
// times reach EngineStats. On the cpu backend, and on cuda (with decode graphs) when a GPU is present.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "backend/backend.h"
#include "engine_harness.h"

namespace ft {
namespace {

struct Case {
  const char* device;
  const char* moe_backend;
};

test::RequestOutput run_alone(const Case& c, const char* moe_backend, const GenerateRequest& r, EngineStats* stats) {
  EngineOptions o = test::engine_options("qwen3_moe", 4, 8192);
  o.device = c.device;
  o.moe_backend = moe_backend;
  o.moe_cache_size = 8;
  auto engine = Engine::create(o);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return {};
  auto stream = (*engine)->submit(r);
  EXPECT_TRUE(stream.ok());
  if (!stream.ok()) return {};
  test::RequestOutput out = test::collect(**stream, 1);
  test::expect_drained(**engine);
  if (stats) *stats = (*engine)->stats();
  return out;
}

class EngineOffload : public testing::TestWithParam<Case> {};

TEST_P(EngineOffload, EqualsFused) {
  const Case& c = GetParam();
  if (!create_backend(c.device).ok()) GTEST_SKIP() << "no " << c.device << " device";
  const bool exact = std::string(c.moe_backend) == "offload";
  for (uint32_t seed : {1u, 2u, 3u}) {
    const GenerateRequest r = test::greedy_request(test::random_prompt(seed, 9 + 7 * static_cast<int32_t>(seed), 512), 16, 3);
    EngineStats stats;
    const test::RequestOutput fused = run_alone(c, "fused", r, nullptr);
    const test::RequestOutput got = run_alone(c, c.moe_backend, r, &stats);
    ASSERT_EQ(got.choices.size(), 1u);
    ASSERT_EQ(got.choices[0].tokens, fused.choices[0].tokens) << "seed " << seed;
    ASSERT_EQ(got.choices[0].top.size(), fused.choices[0].top.size());
    for (size_t i = 0; i < got.choices[0].top.size(); ++i)
      for (size_t j = 0; j < got.choices[0].top[i].size(); ++j) {
        const float a = got.choices[0].top[i][j].logprob, b = fused.choices[0].top[i][j].logprob;
        if (exact) EXPECT_EQ(a, b) << "token " << i << " top " << j;
        else EXPECT_NEAR(a, b, 1e-4) << "token " << i << " top " << j;
      }
    EXPECT_EQ(stats.moe_backend, c.moe_backend);
    EXPECT_EQ(stats.expert_slots, 8);
    ASSERT_EQ(stats.expert_layers.size(), 3u);  // the fixture's three MoE layers
    int64_t fetched = 0;
    double busy_ms = 0;
    for (const auto& l : stats.expert_layers) {
      fetched += l.fetched + l.cpu;
      // Time follows the work: copies where experts were fetched, CPU jobs where they were computed there.
      EXPECT_EQ(l.fetched > 0, l.copy_ms > 0) << l.fetched << " fetched in " << l.copy_ms << " ms";
      EXPECT_EQ(l.cpu > 0, l.cpu_ms > 0) << l.cpu << " on the CPU in " << l.cpu_ms << " ms";
      busy_ms = std::max({busy_ms, l.copy_ms, l.cpu_ms});
    }
    EXPECT_GT(fetched, 0);  // 8 slots for 24 experts: the cache missed
    EXPECT_LT(busy_ms, 1e3 * stats.step_seconds);  // a layer's copies and CPU jobs run inside the steps
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, EngineOffload,
                         testing::Values(Case{"cpu", "offload"}, Case{"cpu", "cpu"}, Case{"cpu", "hybrid"},
                                         Case{"cuda", "offload"}, Case{"cuda", "cpu"}, Case{"cuda", "hybrid"}),
                         [](const testing::TestParamInfo<Case>& param_info) {
                           return std::string(param_info.param.device) + "_" + param_info.param.moe_backend;
                         });

}  // namespace
}  // namespace ft
