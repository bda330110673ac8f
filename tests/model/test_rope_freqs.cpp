// Rope tables against values PyTorch computed: YaRN as transformers 5's _compute_yarn_parameters forms it (float32
// frequencies, float64 correction range and attention factor), on gpt-oss-20b's rope settings at head_dim 16 (the
// gpt_oss fixture: theta 150000, factor 32, original context 4096, truncate false). The expected bits come from
// transformers' function body run by torch on the CPU; the DeepSeek form (mscale, mscale_all_dim, truncated range)
// is checked end to end by test_model_logits on models_yarn/deepseek_v3.
#include <bit>
#include <cmath>
#include <cstdint>

#include <gtest/gtest.h>

#include "model/rope_freqs.h"

namespace ft {
namespace {

// ULPs between two finite floats of the same sign.
int64_t ulps(float a, float b) {
  return std::abs(static_cast<int64_t>(std::bit_cast<int32_t>(a)) - static_cast<int64_t>(std::bit_cast<int32_t>(b)));
}

// YaRN scaling by `factor` over an original context of 4096 positions (beta_fast 32, beta_slow 1: the defaults).
RopeConfig yarn(double factor) {
  RopeConfig rope;
  rope.type = "yarn";
  rope.factor = factor;
  rope.original_max_position_embeddings = 4096;
  return rope;
}

TEST(RopeFreqs, YarnAsTransformersFormsIt) {
  RopeConfig rope = yarn(32.0);
  rope.theta = 150000.0;
  rope.truncate = false;
  auto t = rope_table(rope, 16, 4096);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  const uint32_t want[8] = {0x3f800000, 0x3e66d3fa, 0x3d502194, 0x3bdea840,
                            0x39ef543c, 0x37989328, 0x3689928c, 0x35781728};
  ASSERT_EQ(t->inv_freq.size(), 8u);
  for (int i = 0; i < 8; ++i)  // torch's float32 pow and the C library's may part by an ulp on other settings
    EXPECT_LE(ulps(t->inv_freq[i], std::bit_cast<float>(want[i])), 1) << "inv_freq[" << i << "]";
  EXPECT_EQ(std::bit_cast<uint32_t>(t->attention_factor), 0x3fac5c86u);  // 0.1 ln 32 + 1
}

TEST(RopeFreqs, YarnMscaleRatioAndExplicitFactor) {
  RopeConfig rope = yarn(40.0);
  rope.mscale = 1.0;
  rope.mscale_all_dim = 1.0;  // DeepSeek-V3: the ratio is 1, the softmax scale takes mscale^2 instead
  auto t = rope_table(rope, 64, 163840);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->attention_factor, 1.0f);
  rope.attention_factor = 0.5;
  t = rope_table(rope, 64, 163840);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->attention_factor, 0.5f);
}

TEST(RopeFreqs, UnknownTypeIsRefusedByName) {
  RopeConfig rope;
  rope.type = "longrope";
  auto t = rope_table(rope, 16, 4096);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("longrope"), std::string::npos);
}

}  // namespace
}  // namespace ft
