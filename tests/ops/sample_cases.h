// Sample op cases shared by the cpu and cuda tests, and the check of a backend's result against the ref op: the
// chosen ids equal ref's except on rows where ref itself changes its choice when u or top_p move by 1e-5 (a draw
// on a boundary that float sums may place either side), logprobs within 1e-4, top ids equal.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "op_harness.h"

namespace ft::test {

inline double value_at(const Tensor& t, int64_t i) { return load_as_f64(t.dtype, t.data(), static_cast<size_t>(i)); }

struct SampleCase {
  int64_t n, vocab, n_top;
  float temperature, top_k, top_p, min_p;
  double step = 0;  // > 0: logits rounded to multiples of step (ties by the thousand)
};

inline std::vector<SampleCase> sample_cases() {
  return {{3, 1, 0, 1.0f, 0, 1.0f, 0.0f},
          {5, 17, 3, 0.0f, 0, 1.0f, 0.0f},
          {7, 1000, 5, 1.0f, 0, 1.0f, 0.0f},
          {7, 1000, 0, 0.7f, 40, 1.0f, 0.0f},
          {9, 2049, 20, 1.3f, 0, 0.9f, 0.0f},
          {9, 2049, 2, 0.8f, 50, 0.8f, 0.05f},
          {6, 151936, 20, 1.0f, 20, 0.95f, 0.0f},
          {4, 151936, 1, 0.6f, 0, 0.7f, 0.1f},
          {4, 3001, 0, 1.0f, 1, 1.0f, 0.0f},
          {33, 513, 4, 2.0f, 0, 1.0f, 0.2f},
          // a flat top-p set of thousands of tokens; 100 top logprobs; tied logits across the top-k and top-p cuts,
          // the last with its top-k cut inside a tie of ~58,000 tokens (the search then halves the ids)
          {2, 151936, 0, 2.0f, 0, 0.99f, 0.0f},
          {3, 151936, 100, 1.0f, 0, 1.0f, 0.0f},
          {4, 151936, 5, 0.9f, 50, 0.9f, 0.0f, 1.0},
          {3, 40000, 3, 1.0f, 0, 0.5f, 0.0f, 0.5},
          {2, 151936, 0, 1.0f, 100000, 1.0f, 0.0f, 3.0},
          // rows of 2, 8 and 2 blocks where the device has clusters (by the vocabulary, by the vocabulary, by the rows)
          {3, 20000, 0, 0.8f, 30, 1.0f, 0.0f},
          {5, 70000, 7, 1.0f, 0, 0.9f, 0.02f},
          {40, 151936, 2, 1.0f, 40, 0.9f, 0.0f},
          // cuts from a histogram: a top-p over a top-k of more than a band, at a small temperature, and one whose bin
          // holds ~9,000 tied tokens (the band search then takes over)
          {3, 151936, 0, 1.0f, 5000, 0.9f, 0.0f},
          {4, 50000, 0, 0.05f, 0, 0.9f, 0.0f},
          {2, 151936, 0, 1.0f, 0, 0.9f, 0.0f, 3.0}};
}

// Logits Normal(0, 3) with a few exact ties (or rounded to c.step); params per row with u spread over [0, 1).
inline void fill_sample_inputs(const SampleCase& c, const Tensor& logits, const Tensor& params, uint64_t seed) {
  fill_normal(logits, seed, 3.0);
  if (c.step > 0)
    for (int64_t i = 0; i < logits.numel(); ++i)
      set_value(logits, i, std::round(value_at(logits, i) / c.step) * c.step);
  for (int64_t r = 0; r < c.n; ++r) {
    if (c.vocab > 3) set_value(logits, r * c.vocab + 2, value_at(logits, r * c.vocab + 1));  // a tie
    const double u = std::fmod(0.137 + 0.618034 * static_cast<double>(r), 1.0);
    const float row[5] = {c.temperature, c.top_k, c.top_p, c.min_p, static_cast<float>(u)};
    for (int j = 0; j < 5; ++j) set_value(params, r * 5 + j, row[j]);
  }
}

inline int32_t ref_choice(const Tensor& logits, const Tensor& params, int64_t row, double du, double dp) {
  const int64_t v = logits.dim(1);
  Tensor l = make_tensor(DType::kF32, {1, v}), p = make_tensor(DType::kF32, {1, 5});
  for (int64_t i = 0; i < v; ++i) set_value(l, i, value_at(logits, row * v + i));
  for (int j = 0; j < 5; ++j) set_value(p, j, value_at(params, row * 5 + j));
  set_value(p, 4, std::min(std::max(value_at(p, 4) + du, 0.0), 0.999999));
  if (value_at(p, 2) < 1) set_value(p, 2, value_at(p, 2) + dp);
  Tensor ids = make_tensor(DType::kI32, {1}), lp = make_tensor(DType::kF32, {1, 1});
  HostStream s(nullptr);
  EXPECT_TRUE(ref_op_table().sample(l, p, ids, lp, Tensor{}, s).ok());
  return static_cast<int32_t>(value_at(ids, 0));
}

inline void check_sample(const SampleCase& c, const Tensor& logits, const Tensor& params, const Tensor& ids,
                         const Tensor& lp, const Tensor& top, const std::string& what) {
  Tensor want_ids = make_tensor(DType::kI32, {c.n}), want_lp = make_tensor(DType::kF32, {c.n, 1 + c.n_top});
  Tensor want_top = c.n_top ? make_tensor(DType::kI32, {c.n, c.n_top}) : Tensor{};
  HostStream s(nullptr);
  ASSERT_TRUE(ref_op_table().sample(logits, params, want_ids, want_lp, want_top, s).ok());
  int failures = 0, ambiguous = 0;
  for (int64_t r = 0; r < c.n; ++r) {
    const int32_t want = static_cast<int32_t>(value_at(want_ids, r)), got = static_cast<int32_t>(value_at(ids, r));
    if (got == want) continue;
    bool stable = true;
    for (double d : {-1e-5, 1e-5})
      stable = stable && ref_choice(logits, params, r, d, 0) == want && ref_choice(logits, params, r, 0, d) == want;
    if (!stable) {
      ++ambiguous;
      continue;
    }
    if (failures++ < 10) ADD_FAILURE() << what << " row " << r << ": id " << got << ", ref " << want;
  }
  EXPECT_LE(ambiguous, 1) << what;
  // The chosen token's logprob: compare against the logprob of the token the backend chose.
  for (int64_t r = 0; r < c.n; ++r) {
    const int64_t id = static_cast<int64_t>(value_at(ids, r));
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < c.vocab; ++i) mx = std::max(mx, value_at(logits, r * c.vocab + i));
    for (int64_t i = 0; i < c.vocab; ++i) sum += std::exp(value_at(logits, r * c.vocab + i) - mx);
    const double want_logprob = value_at(logits, r * c.vocab + id) - mx - std::log(sum);
    EXPECT_NEAR(value_at(lp, r * (1 + c.n_top)), want_logprob, 1e-4) << what << " row " << r;
  }
  if (c.n_top == 0) return;
  expect_equal_ints(top, want_top, what + " top ids");
  for (int64_t r = 0; r < c.n; ++r)
    for (int64_t j = 0; j < c.n_top; ++j)
      EXPECT_NEAR(value_at(lp, r * (1 + c.n_top) + 1 + j), value_at(want_lp, r * (1 + c.n_top) + 1 + j), 1e-4)
          << what << " row " << r << " top " << j;
}

inline std::string sample_case_name(const SampleCase& c) {
  return "sample n=" + std::to_string(c.n) + " vocab=" + std::to_string(c.vocab) +
         " t=" + std::to_string(c.temperature) + " top_k=" + std::to_string(c.top_k) +
         " top_p=" + std::to_string(c.top_p) + " min_p=" + std::to_string(c.min_p) +
         (c.step > 0 ? " step=" + std::to_string(c.step) : "");
}

}  // namespace ft::test
