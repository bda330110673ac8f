// Sampling implementation. Filters follow Hugging Face's logits warpers (top-k, then top-p, then min-p).
#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ft {

SamplerState::SamplerState(const SamplingParams& params, std::span<const int32_t> prompt, uint64_t seed)
    : params_(params), rng_(seed) {
  if (params.repetition_penalty != 1.0f)
    for (int32_t t : prompt) ++prompt_tokens_[t];
}

void SamplerState::observe(int32_t token) { ++output_counts_[token]; }

double SamplerState::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

void apply_penalties(std::span<float> logits, const SamplerState& state) {
  const SamplingParams& p = state.params();
  if (p.repetition_penalty != 1.0f) {
    auto penalise = [&](int32_t t) {
      float& l = logits[static_cast<size_t>(t)];
      l = l > 0 ? l / p.repetition_penalty : l * p.repetition_penalty;
    };
    // Every distinct token of the prompt and the output once (not a scan of the vocabulary).
    for (const auto& entry : state.prompt_counts()) penalise(entry.first);
    for (const auto& entry : state.output_counts())
      if (!state.prompt_counts().count(entry.first)) penalise(entry.first);
  }
  if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f)
    for (const auto& [t, count] : state.output_counts())
      logits[static_cast<size_t>(t)] -= p.presence_penalty + p.frequency_penalty * static_cast<float>(count);
}

std::vector<double> sampling_distribution(std::span<const float> logits, const SamplingParams& p) {
  const size_t v = logits.size();
  std::vector<double> prob(v, 0.0);
  const size_t best = static_cast<size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  if (p.temperature <= 0.0f || p.top_k == 1) {
    prob[best] = 1.0;
    return prob;
  }
  // Token order: descending logit, ties to the lower id. Only as much of it is sorted as the filters need
  // (top-k selects, top-p sorts a growing prefix), so a 150k vocabulary is not sorted every step.
  auto before = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::vector<int32_t> order(v);
  std::iota(order.begin(), order.end(), 0);
  size_t keep = v;
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < v) {
    keep = static_cast<size_t>(p.top_k);
    std::nth_element(order.begin(), order.begin() + static_cast<long>(keep - 1), order.end(), before);
  }
  const double t = p.temperature, mx = logits[best] / t;
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += (prob[order[i]] = std::exp(logits[order[i]] / t - mx));
  for (size_t i = 0; i < keep; ++i) prob[order[i]] /= sum;
  if (p.top_p < 1.0f) {
    // Keep the smallest prefix whose mass reaches top_p (the token that crosses it stays).
    double cum = 0;
    size_t n = 0, sorted = 0;
    while (n < keep) {
      if (n == sorted) {
        const size_t more = std::min(keep, std::max<size_t>(64, 4 * sorted));
        std::partial_sort(order.begin() + static_cast<long>(sorted), order.begin() + static_cast<long>(more),
                          order.begin() + static_cast<long>(keep), before);
        sorted = more;
      }
      cum += prob[order[n++]];
      if (cum >= p.top_p) break;
    }
    for (size_t i = n; i < keep; ++i) prob[order[i]] = 0.0;
    keep = n;
  }
  if (p.min_p > 0.0f) {
    const double floor = p.min_p * prob[best];
    for (size_t i = 0; i < keep; ++i)
      if (prob[order[i]] < floor) prob[order[i]] = 0.0;
  }
  sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += prob[order[i]];
  for (size_t i = 0; i < keep; ++i) prob[order[i]] /= sum;
  return prob;
}

namespace {

void fill_logprobs(std::span<const float> raw, int32_t chosen, int32_t n_top, SampleResult& r) {
  double mx = -INFINITY;
  for (float l : raw) mx = std::max(mx, static_cast<double>(l));
  double sum = 0;
  for (float l : raw) sum += std::exp(l - mx);
  const double lse = mx + std::log(sum);
  r.logprob = static_cast<float>(raw[static_cast<size_t>(chosen)] - lse);
  if (n_top <= 0) return;
  std::vector<int32_t> order(raw.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t n = std::min(order.size(), static_cast<size_t>(n_top));
  std::partial_sort(order.begin(), order.begin() + static_cast<long>(n), order.end(),
                    [&](int32_t a, int32_t b) { return raw[a] > raw[b] || (raw[a] == raw[b] && a < b); });
  for (size_t i = 0; i < n; ++i) r.top.push_back({order[i], static_cast<float>(raw[order[i]] - lse)});
}

}  // namespace

SampleResult sample_token(std::span<float> logits, SamplerState& state) {
  SampleResult r;
  const SamplingParams& p = state.params();
  std::vector<float> raw;
  if (p.logprobs >= 0) raw.assign(logits.begin(), logits.end());
  apply_penalties(logits, state);
  const std::vector<double> prob = sampling_distribution(logits, p);
  const double u = state.uniform();
  double cum = 0;
  int32_t last_nonzero = 0;
  r.token = -1;
  for (size_t i = 0; i < prob.size(); ++i) {
    if (prob[i] <= 0) continue;
    last_nonzero = static_cast<int32_t>(i);
    cum += prob[i];
    if (u < cum) {
      r.token = static_cast<int32_t>(i);
      break;
    }
  }
  if (r.token < 0) r.token = last_nonzero;  // rounding left u above the total
  if (p.logprobs >= 0) fill_logprobs(raw, r.token, p.logprobs, r);
  state.observe(r.token);
  return r;
}

}  // namespace ft
