// Model logits on the CUDA backend against the float64 Hugging Face transformers reference of each fixture
// (tests/data/models*/*/reference*.safetensors); skipped without a GPU.
//  f32 activations: relative L2 <= 1e-5 at every position (the Gated DeltaNet models: the CPU tests' bounds),
//  one-shot and chunked, and greedy ids, as on the CPU.
//  bf16 activations: the median per-position error and the top-1 agreement with the float64 reference over the
//  fixture's positions no worse than transformers' own bf16 run on the same files (figures from the fixtures'
//  README); the Gated DeltaNet model, whose delta-rule state and chunk arithmetic stay fp32, agrees on at least 98%
//  of positions.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "engine/model_session.h"
#include "engine/sequence_runner.h"
#include "fixture_reference.h"
#include "reference_check.h"

namespace ft {
namespace {

constexpr double kMaxRelL2 = 1e-5;
// Gated DeltaNet models, as in test_model_logits.cpp: twice what transformers' float32 run and our ref backend reach
// (short / long prompts; models_alt is the deeper 8-layer variant).
constexpr double kGdnShort = 1.1e-5, kGdnLong = 4e-5;
// The deeper models_alt/qwen3_5_moe on the GPU: its chunked delta rule sums in another order than the CPU's and
// reaches 8.7e-5 (short) and 1.6e-4 (long); transformers' own float32 run (scripts/fixtures/
// measure_transformers.py float32, H200, TF32 off) reaches 3.7e-5 and 6.3e-2 there. Issue 8 bounds the alt variant on
// the CPU only; the GPU is held to these measured figures plus a margin so a regression still fails.
constexpr double kGdnAltShortCuda = 1.0e-4, kGdnAltLongCuda = 2.0e-4;

Result<ModelSession> open_cuda(const std::string& model, DType act, int32_t max_tokens) {
  SessionOptions o;
  o.model_dir = std::string(FT_TEST_DATA) + "/" + model;
  o.device = "cuda";
  o.act_dtype = act;
  o.max_tokens = max_tokens;
  o.context = 512;
  o.show_progress = false;
  return ModelSession::open(o);
}

bool have_gpu() { return create_backend("cuda").ok(); }

struct F32Case {
  const char* model;
  int32_t chunk;  // 0: the whole prompt in one step
  double max_short = kMaxRelL2;  // per-position relative L2 bound on reference.safetensors
  double max_long = kMaxRelL2;   // ... and on reference_long.safetensors
};

std::string f32_name(const testing::TestParamInfo<F32Case>& info) {
  std::string model = info.param.model;
  std::replace(model.begin(), model.end(), '/', '_');
  return model + "_chunk" + std::to_string(info.param.chunk);
}

class CudaLogitsF32 : public testing::TestWithParam<F32Case> {
 protected:
  void check_file(const std::string& file, double max_rel_l2) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device present";
    const F32Case& c = GetParam();
    auto s = open_cuda(c.model, DType::kF32, c.chunk > 0 ? c.chunk : 512);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    test::check_reference_file(*s, c.model, file, c.chunk, max_rel_l2, "cuda f32");
  }
};

TEST_P(CudaLogitsF32, ShortPrompts) { check_file("reference.safetensors", GetParam().max_short); }
TEST_P(CudaLogitsF32, LongPrompts) { check_file("reference_long.safetensors", GetParam().max_long); }

INSTANTIATE_TEST_SUITE_P(
    Qwen3, CudaLogitsF32,
    testing::Values(F32Case{"models/qwen3_dense", 0}, F32Case{"models/qwen3_dense", 1},
                    F32Case{"models/qwen3_dense", 5}, F32Case{"models/qwen3_dense", 16},
                    F32Case{"models/qwen3_moe", 0}, F32Case{"models/qwen3_moe", 1}, F32Case{"models/qwen3_moe", 5},
                    F32Case{"models/qwen3_moe", 16}, F32Case{"models_alt/qwen3_dense", 0},
                    F32Case{"models_alt/qwen3_dense", 5}, F32Case{"models_alt/qwen3_moe", 0},
                    F32Case{"models_alt/qwen3_moe", 5}),
    f32_name);

// Gated DeltaNet (3 of 4 layers): one-shot (gated_delta_chunked), chunks of 1 (gated_delta_step), 3 and 64, the
// recurrent state carried across steps in its f32 slots. models_alt: 8 layers, 16 experts, top-4.
INSTANTIATE_TEST_SUITE_P(
    Qwen35Moe, CudaLogitsF32,
    testing::Values(F32Case{"models/qwen3_5_moe", 0, kGdnShort, kGdnLong},
                    F32Case{"models/qwen3_5_moe", 1, kGdnShort, kGdnLong},
                    F32Case{"models/qwen3_5_moe", 3, kGdnShort, kGdnLong},
                    F32Case{"models/qwen3_5_moe", 64, kGdnShort, kGdnLong},
                    F32Case{"models_alt/qwen3_5_moe", 0, kGdnAltShortCuda, kGdnAltLongCuda},
                    F32Case{"models_alt/qwen3_5_moe", 1, kGdnAltShortCuda, kGdnAltLongCuda},
                    F32Case{"models_alt/qwen3_5_moe", 3, kGdnAltShortCuda, kGdnAltLongCuda},
                    F32Case{"models_alt/qwen3_5_moe", 64, kGdnAltShortCuda, kGdnAltLongCuda}),
    f32_name);

// Multi-head latent attention (keys 24 dims, values 16: the attention's general path), grouped sigmoid routing;
// models_yarn: YaRN rope and q_proj.
INSTANTIATE_TEST_SUITE_P(DeepseekV3, CudaLogitsF32,
                         testing::Values(F32Case{"models/deepseek_v3", 0}, F32Case{"models/deepseek_v3", 1},
                                         F32Case{"models/deepseek_v3", 5}, F32Case{"models_alt/deepseek_v3", 0},
                                         F32Case{"models_alt/deepseek_v3", 5}, F32Case{"models_yarn/deepseek_v3", 0},
                                         F32Case{"models_yarn/deepseek_v3", 5}),
                         f32_name);

// Attention sinks, sliding-window layers, biases everywhere, YaRN rope; experts with biases and the clamped SwiGLU.
INSTANTIATE_TEST_SUITE_P(GptOss, CudaLogitsF32,
                         testing::Values(F32Case{"models/gpt_oss", 0}, F32Case{"models/gpt_oss", 1},
                                         F32Case{"models/gpt_oss", 5}, F32Case{"models_alt/gpt_oss", 0},
                                         F32Case{"models_alt/gpt_oss", 5}, F32Case{"models_mxfp4/gpt_oss", 0},
                                         F32Case{"models_mxfp4/gpt_oss", 5}),
                         f32_name);

// transformers 5.17 in bfloat16 against the same float64 references, per fixture: the positions of both reference
// files together (60 + 357). Pooled, because one file's 60 positions leave the comparison to a single flipped expert
// choice: on DeepSeek-V3 an argmax at a reference top-2 margin of 0.2 follows one (57/60 against transformers'
// 58/60), while over the fixture we agree on more positions than transformers does. The median bound is
// transformers' median over the same 417 positions, measured on the H200 by
// scripts/fixtures/measure_transformers.py bfloat16; the top-1 bound is the sum of the two
// counts ../shared/fixtures/README.md gives (that run's counts are within one of them).
struct Bf16Case {
  const char* model;
  double median;  // transformers' median per-position relative L2 over both files
  int top1;       // positions whose argmax must match the float64 reference's (transformers' count, both files)
};

std::string bf16_name(const testing::TestParamInfo<Bf16Case>& info) {
  std::string name = info.param.model;
  std::replace(name.begin(), name.end(), '/', '_');
  return name;
}

class CudaLogitsBf16 : public testing::TestWithParam<Bf16Case> {};

TEST_P(CudaLogitsBf16, NoWorseThanTransformersBf16) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device present";
  const Bf16Case& c = GetParam();
  auto s = open_cuda(c.model, DType::kBF16, 512);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const int64_t vocab = s->model->config().vocab_size;
  std::vector<double> errors;
  int top1 = 0;
  for (const char* file : {"reference.safetensors", "reference_long.safetensors"}) {
    auto prompts = test::read_reference(std::string(FT_TEST_DATA) + "/" + c.model + "/" + file, vocab);
    ASSERT_FALSE(prompts.empty()) << file;
    for (const auto& ref : prompts) {
      SequenceRunner runner(*s->model, *s->backend, *s->kv);
      std::vector<float> all, last;
      ASSERT_TRUE(runner.feed(ref.input_ids, 0, &all, last).ok());
      for (size_t i = 0; i < ref.input_ids.size(); ++i) {
        const float* got = &all[i * vocab];
        const float* want = &ref.logits[i * vocab];
        errors.push_back(test::relative_l2(got, want, vocab));
        if (std::max_element(got, got + vocab) - got == std::max_element(want, want + vocab) - want) {
          ++top1;
          continue;
        }
        std::vector<float> sorted(want, want + vocab);
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
        std::printf("  %s: argmax differs at position %zu (reference top-2 margin %.3g)\n", file, i,
                    sorted[0] - sorted[1]);
      }
    }
  }
  ASSERT_EQ(errors.size(), size_t{60 + 357});
  std::sort(errors.begin(), errors.end());
  const double median = errors[errors.size() / 2];
  std::printf(
      "cuda bf16 %s: median relative L2 %.3g (transformers %.4g), worst %.3g, top-1 %d/%zu "
      "(transformers %d)\n",
      c.model, median, c.median, errors.back(), top1, errors.size(), c.top1);
  EXPECT_LE(median, c.median);
  EXPECT_GE(top1, c.top1);
}

// transformers: qwen3_dense median 1.261e-2 over both files, top-1 58/60 and 347/357; qwen3_moe 1.451e-2, 57 and 338.
INSTANTIATE_TEST_SUITE_P(Qwen3, CudaLogitsBf16,
                         testing::Values(Bf16Case{"models/qwen3_dense", 1.261e-2, 58 + 347},
                                         Bf16Case{"models/qwen3_moe", 1.451e-2, 57 + 338}),
                         bf16_name);

// Qwen3.5 MoE: transformers' bf16 run agrees on 56/60 and 273/357 positions (median 4.482e-2 over both files); with
// the delta-rule state and chunk arithmetic in fp32 we hold top-1 to 98% of the positions (59/60, 350/357).
INSTANTIATE_TEST_SUITE_P(Qwen35Moe, CudaLogitsBf16, testing::Values(Bf16Case{"models/qwen3_5_moe", 4.482e-2, 59 + 350}),
                         bf16_name);

// DeepSeek-V3: transformers' median 1.623e-2 over both files, top-1 58/60 and 343/357.
INSTANTIATE_TEST_SUITE_P(DeepseekV3, CudaLogitsBf16,
                         testing::Values(Bf16Case{"models/deepseek_v3", 1.623e-2, 58 + 343}), bf16_name);

// gpt-oss: transformers' median 2.737e-2 over both files (1.58e-2 and 3.12e-2 per file), top-1 58/60 and 320/357.
INSTANTIATE_TEST_SUITE_P(GptOss, CudaLogitsBf16, testing::Values(Bf16Case{"models/gpt_oss", 2.737e-2, 58 + 320}),
                         bf16_name);

}  // namespace
}  // namespace ft
