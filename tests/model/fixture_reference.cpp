// Fixture reference reading and comparison helpers.
#include "fixture_reference.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace ft::test {

std::vector<ReferencePrompt> read_reference(const std::string& path, int64_t vocab) {
  std::vector<ReferencePrompt> prompts;
  // The reference files live in a directory with other safetensors; open them one by one.
  auto file = SafetensorsFile::open(path);
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  if (!file.ok()) return prompts;
  for (int i = 0;; ++i) {
    const std::string p = "prompt" + std::to_string(i) + ".";
    const TensorInfo* ids = (*file)->find(p + "input_ids");
    const TensorInfo* logits = (*file)->find(p + "logits");
    if (!ids || !logits) break;
    ReferencePrompt r;
    const auto* id_data = reinterpret_cast<const int64_t*>((*file)->tensor_data(*ids));
    for (int64_t j = 0; j < ids->shape[0]; ++j) r.input_ids.push_back(static_cast<int32_t>(id_data[j]));
    EXPECT_EQ(logits->shape[1], vocab);
    const auto* l = reinterpret_cast<const float*>((*file)->tensor_data(*logits));
    r.logits.assign(l, l + logits->shape[0] * logits->shape[1]);
    if (const TensorInfo* g = (*file)->find(p + "greedy_ids")) {
      const auto* gd = reinterpret_cast<const int64_t*>((*file)->tensor_data(*g));
      for (int64_t j = 0; j < g->shape[0]; ++j) r.greedy_ids.push_back(static_cast<int32_t>(gd[j]));
    }
    prompts.push_back(std::move(r));
  }
  return prompts;
}

double relative_l2(const float* a, const float* b, int64_t vocab) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

double top2_margin(const float* row, int64_t vocab) {
  float best = -INFINITY, second = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i) {
    if (row[i] > best) {
      second = best;
      best = row[i];
    } else if (row[i] > second) {
      second = row[i];
    }
  }
  return static_cast<double>(best) - second;
}

}  // namespace ft::test
