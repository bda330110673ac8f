// Token sampling: penalties, temperature, top-k, top-p, min-p, seeded draws, logprobs.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "freetoken/engine.h"

namespace ft {

// Per-choice sampling state: its random stream and the tokens it has seen.
class SamplerState {
 public:
  SamplerState(const SamplingParams& params, std::span<const int32_t> prompt, uint64_t seed);

  const SamplingParams& params() const { return params_; }
  void observe(int32_t token);  // a token was generated
  // A uniform draw in [0, 1) from this choice's stream.
  double uniform();

  const std::unordered_map<int32_t, int32_t>& prompt_counts() const { return prompt_tokens_; }
  const std::unordered_map<int32_t, int32_t>& output_counts() const { return output_counts_; }

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::unordered_map<int32_t, int32_t> prompt_tokens_;
  std::unordered_map<int32_t, int32_t> output_counts_;
};

struct SampleResult {
  int32_t token = 0;
  float logprob = 0.0f;             // of the model's distribution (log_softmax of the raw logits)
  std::vector<TokenLogprob> top;    // params.logprobs most likely tokens, by that distribution
};

// Applies the penalties in place to `logits` [vocab] (raw model logits on entry).
void apply_penalties(std::span<float> logits, const SamplerState& state);
// The sampling distribution after penalties: temperature, then top-k, top-p, min-p filters, renormalised.
// Returns probabilities [vocab] (zeros for filtered tokens). Temperature <= 0 puts all mass on the argmax.
std::vector<double> sampling_distribution(std::span<const float> penalised_logits, const SamplingParams& p);
// The whole sampling step: logprobs from the raw logits, then penalties, distribution and one draw.
SampleResult sample_token(std::span<float> logits, SamplerState& state);

}  // namespace ft
