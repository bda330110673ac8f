// Graph replay through the engine on the CUDA backend: decode steps replayed as captured graphs (padded to 1, 2, 4 or 8
// sequences) give bit for bit the tokens, logprobs and top logprobs of the same engine run eagerly
// (EngineOptions::cuda_graph off); skipped without a GPU. One request with n seeded, sampled choices makes every
// step's batch the same in both runs (separate requests would be batched as the engine thread happens to see them,
// and the attention's ranges and cuBLASLt's algorithm depend on a step's rows rounded up to a power of two). Prompts
// of 1016 tokens under a 4096-token context cross from a key capacity of 1024 keys to 2048 as they decode, so their
// steps replay graphs of two capacities.
#include <cstring>

#include <gtest/gtest.h>

#include "backend/backend.h"
#include "engine_harness.h"

namespace ft {
namespace {

bool have_gpu() { return create_backend("cuda").ok(); }

struct Emitted {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::vector<std::vector<TokenLogprob>> top;
};

struct Case {
  const char* model;
  const char* dtype;
  int32_t n_choices;
  int32_t prompt = 13;
  int32_t context = 256;
};

std::vector<Emitted> run(const Case& c, bool graphs) {
  EngineOptions o = test::engine_options(c.model, 8, 8192);
  o.device = "cuda";
  o.dtype = c.dtype;
  o.cuda_graph = graphs;
  o.context_length = c.context;
  auto engine = Engine::create(o);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return {};
  GenerateRequest r = test::greedy_request(test::random_prompt(100, c.prompt, 512), 12, 3);
  r.n = c.n_choices;
  r.sampling.temperature = 0.8f;  // seeded draws on the device: the choices diverge, the same way in both runs
  r.sampling.seed = 7;
  auto stream = (*engine)->submit(std::move(r));
  EXPECT_TRUE(stream.ok());
  if (!stream.ok()) return {};
  std::vector<Emitted> out(static_cast<size_t>(c.n_choices));
  TokenEvent e;
  while ((*stream)->next(e)) {
    EXPECT_NE(e.finish, FinishReason::kError) << e.error.to_string();
    if (!e.has_token) continue;
    Emitted& em = out.at(static_cast<size_t>(e.choice));
    em.tokens.push_back(e.token);
    em.logprobs.push_back(e.logprob);
    em.top.push_back(e.top);
  }
  return out;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

class EngineCudaGraph : public testing::TestWithParam<Case> {};

TEST_P(EngineCudaGraph, ReplayEqualsEagerBitwise) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device present";
  const Case& c = GetParam();
  const auto eager = run(c, false), graph = run(c, true);
  ASSERT_EQ(eager.size(), graph.size());
  int mismatches = 0;
  for (size_t r = 0; r < eager.size(); ++r) {
    ASSERT_EQ(graph[r].tokens, eager[r].tokens) << "choice " << r;
    for (size_t t = 0; t < eager[r].tokens.size(); ++t) {
      bool same = same_bits(graph[r].logprobs[t], eager[r].logprobs[t]) && graph[r].top[t].size() == eager[r].top[t].size();
      for (size_t j = 0; same && j < eager[r].top[t].size(); ++j)
        same = graph[r].top[t][j].token == eager[r].top[t][j].token &&
               same_bits(graph[r].top[t][j].logprob, eager[r].top[t][j].logprob);
      if (!same && mismatches++ < 10)
        ADD_FAILURE() << "choice " << r << " token " << t << ": logprob " << graph[r].logprobs[t] << " vs eager "
                      << eager[r].logprobs[t];
    }
  }
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return std::string(c.model) + "_" + c.dtype + "_" + std::to_string(c.n_choices) +
         (c.prompt != 13 ? "_prompt" + std::to_string(c.prompt) : "");
}

// Padded batches: 3 -> 4, 5 and 6 -> 8 (steps of 5 to 8 rows take cuBLASLt for the dense projections, and the expert
// GEMVs up to 8 tokens), also under a key capacity of 1024 or more, where the keys no longer cap the generic attention
// kernel's split count (the fixtures' head_dim 16 takes it in f32 and bf16). DeepSeek-V3: latent attention (keys 24
// wide, values 16) and grouped sigmoid routing. gpt-oss: sinks, sliding windows, experts with biases.
INSTANTIATE_TEST_SUITE_P(
    Models, EngineCudaGraph,
    testing::Values(Case{"qwen3_moe", "f32", 1}, Case{"qwen3_moe", "f32", 3}, Case{"qwen3_dense", "f32", 3},
                    Case{"qwen3_dense", "f32", 4}, Case{"qwen3_moe", "bf16", 1}, Case{"qwen3_moe", "bf16", 3},
                    Case{"qwen3_dense", "bf16", 4}, Case{"qwen3_moe", "bf16", 5}, Case{"qwen3_dense", "bf16", 6},
                    Case{"qwen3_moe", "f32", 6}, Case{"qwen3_moe", "bf16", 1, 1016, 4096},
                    Case{"qwen3_dense", "bf16", 3, 1016, 4096}, Case{"qwen3_dense", "f32", 3, 1016, 4096},
                    Case{"qwen3_moe", "bf16", 5, 1016, 4096}, Case{"deepseek_v3", "bf16", 3},
                    Case{"deepseek_v3", "f32", 1}, Case{"gpt_oss", "bf16", 3}, Case{"gpt_oss", "f32", 1}),
    case_name);

}  // namespace
}  // namespace ft
