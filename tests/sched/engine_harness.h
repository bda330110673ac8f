// Helpers for engine tests: build an engine on a fixture model, run requests, collect their outputs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "freetoken/engine.h"

namespace ft::test {

struct ChoiceOutput {
  std::vector<int32_t> tokens;
  std::vector<std::vector<TokenLogprob>> top;  // per token, with logprobs requested
  FinishReason finish = FinishReason::kNone;
};

struct RequestOutput {
  std::vector<ChoiceOutput> choices;
  Usage usage;
};

EngineOptions engine_options(const std::string& model, int32_t max_running, int32_t max_prefill_length,
                             int64_t num_pages = 0);
// An engine on tests/data/models/MODEL with those options.
std::unique_ptr<Engine> make_engine(int32_t max_running, int32_t max_prefill_length, int64_t num_pages = 0,
                                    const std::string& model = "qwen3_moe");
// Waits for the engine to finish its work, then expects no request, KV page or state slot in use.
void expect_drained(Engine& engine);
// Reads a stream to its end.
RequestOutput collect(RequestStream& stream, int32_t n_choices);
GenerateRequest greedy_request(std::vector<int32_t> prompt, int32_t max_tokens, int32_t logprobs = -1);
// Deterministic pseudo-random prompt of `length` tokens below `vocab`.
std::vector<int32_t> random_prompt(uint32_t seed, int32_t length, int32_t vocab);

}  // namespace ft::test
