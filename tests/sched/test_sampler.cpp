// Sampling checked against exact distributions written out here from the definitions (Hugging Face's
// repetition penalty and top-k/top-p/min-p warpers, OpenAI's presence/frequency penalties), and seeded
// draws against those distributions (chi-square) and against themselves (reproducibility).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "engine/sampler.h"

namespace ft {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, -0.5f, 2.5f, 0.0f, 2.5f, -2.0f, 1.5f};

// softmax(logits / t) restricted to `keep` (others 0), renormalised.
// t is the float temperature the params carry, widened exactly as the sampler widens it.
std::vector<double> restricted_softmax(const std::vector<float>& l, float t_param, const std::vector<int>& keep) {
  const double t = t_param;
  std::vector<double> p(l.size(), 0.0);
  double sum = 0;
  for (int i : keep) sum += std::exp(l[i] / t);
  for (int i : keep) p[i] = std::exp(l[i] / t) / sum;
  return p;
}

void expect_distribution(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "token " << i;
}

TEST(SamplingDistribution, TemperatureOnly) {
  SamplingParams p;
  p.temperature = 0.7f;
  expect_distribution(sampling_distribution(kLogits, p), restricted_softmax(kLogits, 0.7f, {0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(SamplingDistribution, GreedyPutsAllMassOnArgmax) {
  SamplingParams p;
  p.temperature = 0.0f;
  std::vector<double> want(kLogits.size(), 0.0);
  want[1] = 1.0;
  expect_distribution(sampling_distribution(kLogits, p), want);
}

TEST(SamplingDistribution, TopK) {
  SamplingParams p;
  p.top_k = 3;  // 3.0 (1), 2.5 (3), 2.5 (5): ties keep the lower ids first, all three fit
  expect_distribution(sampling_distribution(kLogits, p), restricted_softmax(kLogits, 1.0f, {1, 3, 5}));
  p.top_k = 2;  // the tie at 2.5 is broken by id: 3 stays, 5 goes
  expect_distribution(sampling_distribution(kLogits, p), restricted_softmax(kLogits, 1.0f, {1, 3}));
}

TEST(SamplingDistribution, TopP) {
  // Full softmax: p1 ~ 0.398, p3 = p5 ~ 0.241, then p7 ~ 0.0538 ... Keep the smallest prefix reaching top_p.
  const auto full = restricted_softmax(kLogits, 1.0f, {0, 1, 2, 3, 4, 5, 6, 7});
  SamplingParams p;
  p.top_p = static_cast<float>(full[1] + full[3] - 1e-6);  // reached after two tokens
  expect_distribution(sampling_distribution(kLogits, p), restricted_softmax(kLogits, 1.0f, {1, 3}));
  p.top_p = static_cast<float>(full[1] + full[3] + 1e-6);  // needs a third
  expect_distribution(sampling_distribution(kLogits, p), restricted_softmax(kLogits, 1.0f, {1, 3, 5}));
}

TEST(SamplingDistribution, MinP) {
  const auto full = restricted_softmax(kLogits, 1.0f, {0, 1, 2, 3, 4, 5, 6, 7});
  SamplingParams p;
  p.min_p = 0.2f;  // keep p >= 0.2 * p_max
  std::vector<int> keep;
  for (int i = 0; i < 8; ++i)
    if (full[i] >= 0.2 * full[1]) keep.push_back(i);
  expect_distribution(sampling_distribution(kLogits, p), restricted_softmax(kLogits, 1.0f, keep));
}

TEST(SamplingDistribution, TopKThenTopPThenMinPWithTemperature) {
  SamplingParams p;
  p.temperature = 1.5f;
  p.top_k = 5;     // ids 1, 3, 5, 7, 0
  p.top_p = 0.8f;
  p.min_p = 0.3f;
  auto after_k = restricted_softmax(kLogits, 1.5f, {1, 3, 5, 7, 0});
  std::vector<int> order = {1, 3, 5, 7, 0}, keep;
  double cum = 0;
  for (int i : order) {
    keep.push_back(i);
    cum += after_k[i];
    if (cum >= 0.8) break;
  }
  std::vector<int> kept;
  for (int i : keep)
    if (after_k[i] >= 0.3 * after_k[1]) kept.push_back(i);
  expect_distribution(sampling_distribution(kLogits, p), restricted_softmax(kLogits, 1.5f, kept));
}

TEST(Penalties, RepetitionPresenceFrequency) {
  SamplingParams p;
  p.repetition_penalty = 1.3f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  const std::vector<int32_t> prompt = {0, 2};
  SamplerState state(p, prompt, 1);
  state.observe(1);
  state.observe(1);
  state.observe(6);
  std::vector<float> l = kLogits;
  apply_penalties(l, state);
  std::vector<float> want = kLogits;
  for (int t : {0, 1, 2, 6}) want[t] = want[t] > 0 ? want[t] / 1.3f : want[t] * 1.3f;  // prompt and output
  want[1] -= 0.5f + 0.25f * 2;  // output only
  want[6] -= 0.5f + 0.25f * 1;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(l[i], want[i]) << i;
}

// Pearson chi-square of `n` seeded draws against the exact distribution.
double chi_square(const SamplingParams& p, int n, uint64_t seed, const std::vector<double>& want) {
  SamplerState state(p, {}, seed);
  std::vector<int> counts(kLogits.size(), 0);
  for (int i = 0; i < n; ++i) {
    std::vector<float> l = kLogits;
    ++counts[static_cast<size_t>(sample_token(l, state).token)];
  }
  double chi = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "a filtered token was drawn: " << i;
      continue;
    }
    const double e = want[i] * n;
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

TEST(SeededDraws, FollowTheExactDistribution) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_p = 0.95f;
  auto want = sampling_distribution(kLogits, p);
  // 7 degrees of freedom at most: the 0.999 quantile is 24.3.
  EXPECT_LT(chi_square(p, 200000, 42, want), 24.3);
  p.top_k = 3;
  p.temperature = 1.2f;
  want = sampling_distribution(kLogits, p);
  EXPECT_LT(chi_square(p, 200000, 7, want), 24.3);
}

TEST(SeededDraws, SameSeedSameTokens) {
  SamplingParams p;
  p.temperature = 1.0f;
  auto draw = [&](uint64_t seed) {
    SamplerState s(p, {}, seed);
    std::vector<int32_t> out;
    for (int i = 0; i < 200; ++i) {
      std::vector<float> l = kLogits;
      out.push_back(sample_token(l, s).token);
    }
    return out;
  };
  EXPECT_EQ(draw(5), draw(5));
  EXPECT_NE(draw(5), draw(6));
}

TEST(Logprobs, AreLogSoftmaxOfTheRawLogits) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.logprobs = 3;
  p.repetition_penalty = 2.0f;  // penalties must not change the reported distribution
  SamplerState s(p, std::vector<int32_t>{1}, 1);
  std::vector<float> l = kLogits;
  SampleResult r = sample_token(l, s);
  double lse = 0;
  for (float x : kLogits) lse += std::exp(static_cast<double>(x));
  lse = std::log(lse);
  EXPECT_NEAR(r.logprob, kLogits[static_cast<size_t>(r.token)] - lse, 1e-6);
  ASSERT_EQ(r.top.size(), 3u);
  EXPECT_EQ(r.top[0].token, 1);
  EXPECT_EQ(r.top[1].token, 3);
  EXPECT_EQ(r.top[2].token, 5);
  EXPECT_NEAR(r.top[1].logprob, 2.5 - lse, 1e-6);
}

}  // namespace
}  // namespace ft
