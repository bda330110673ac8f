// Reads a fixture's float64 transformers reference (reference*.safetensors) and compares logits to it.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace ft::test {

struct ReferencePrompt {
  std::vector<int32_t> input_ids;
  std::vector<float> logits;       // [T, vocab]
  std::vector<int32_t> greedy_ids; // may be empty (long references carry none)
};

// All prompts `prompt{i}.*` of one reference file.
std::vector<ReferencePrompt> read_reference(const std::string& path, int64_t vocab);

// ||a - b|| / ||b|| over one row of `vocab` values.
double relative_l2(const float* a, const float* b, int64_t vocab);

// Difference between the largest and second largest value.
double top2_margin(const float* row, int64_t vocab);

}  // namespace ft::test
