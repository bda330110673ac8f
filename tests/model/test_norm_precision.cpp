// Zero-centred RMSNorm precision: multipliers 1 + w must be formed in fp32. A copy of the qwen3_5_moe fixture
// whose zero-centred norm weights are replaced by bf16(1 + w) - 1 (exactly what pre-adding 1 in bf16 at load time
// would compute) misses the float64 transformers reference by more than the fp32 bound that the unmodified
// checkpoint meets (test_model_logits), so that bug cannot come back unnoticed.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include <gtest/gtest.h>

#include "engine/model_session.h"
#include "engine/sequence_runner.h"
#include "fixture_reference.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"

namespace ft {
namespace {

namespace fs = std::filesystem;

constexpr double kShortBound = 1.1e-5;  // test_model_logits' bound for this fixture's short prompts

bool zero_centred_norm(const std::string& name) {
  for (const char* s : {"input_layernorm.weight", "post_attention_layernorm.weight", "q_norm.weight",
                        "k_norm.weight"})
    if (name.ends_with(s)) return true;
  return name == "model.norm.weight";
}

// Writes the fixture with every zero-centred norm weight w replaced by bf16(bf16(1 + w) - 1); returns how many
// multipliers changed.
int64_t write_preadded_copy(const std::string& src, const std::string& dst) {
  fs::create_directories(dst);
  for (const char* f : {"config.json", "generation_config.json"}) fs::copy_file(src + "/" + f, dst + "/" + f);
  auto file = SafetensorsFile::open(src + "/model.safetensors");
  EXPECT_TRUE(file.ok());
  SafetensorsWriter w(dst + "/model.safetensors");
  for (const auto& t : (*file)->tensors()) EXPECT_TRUE(w.add(t.name, t.dtype, t.shape).ok());
  EXPECT_TRUE(w.begin().ok());
  int64_t changed = 0;
  for (const auto& t : (*file)->tensors()) {
    std::vector<unsigned char> bytes((*file)->tensor_data(t), (*file)->tensor_data(t) + t.nbytes);
    if (zero_centred_norm(t.name)) {
      EXPECT_EQ(t.dtype, DType::kBF16) << t.name;
      auto* v = reinterpret_cast<uint16_t*>(bytes.data());
      for (size_t i = 0; i < t.nbytes / 2; ++i) {
        const float w0 = bf16_to_f32(v[i]);
        const float multiplier = bf16_to_f32(f32_to_bf16(1.0f + w0));  // the pre-added bf16 multiplier
        v[i] = f32_to_bf16(multiplier - 1.0f);                         // exact: at most 8 significant bits
        changed += multiplier != 1.0f + w0;
      }
    }
    EXPECT_TRUE(w.write_tensor(t.name, bytes.data(), bytes.size()).ok());
  }
  EXPECT_TRUE(w.finish().ok());
  return changed;
}

TEST(NormPrecision, PreAddingOneInBf16BreaksTheFp32Bound) {
  const std::string src = std::string(FT_TEST_DATA) + "/models/qwen3_5_moe";
  const std::string dst = (fs::temp_directory_path() / ("ft_norm_preadd_" + std::to_string(::getpid()))).string();
  fs::remove_all(dst);
  const int64_t changed = write_preadded_copy(src, dst);
  EXPECT_GT(changed, 0);
  SessionOptions o;
  o.model_dir = dst;
  o.context = 512;
  o.show_progress = false;
  auto s = ModelSession::open(o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const int64_t vocab = s->model->config().vocab_size;
  double worst = 0;
  for (const auto& ref : test::read_reference(src + "/reference.safetensors", vocab)) {
    SequenceRunner runner(*s->model, *s->backend, *s->kv);
    std::vector<float> all, last;
    ASSERT_TRUE(runner.feed(ref.input_ids, 0, &all, last).ok());
    for (size_t i = 0; i < ref.input_ids.size(); ++i)
      worst = std::max(worst, test::relative_l2(&all[i * vocab], &ref.logits[i * vocab], vocab));
  }
  std::printf("pre-added bf16 multipliers: %lld changed, worst relative L2 %.3g\n", static_cast<long long>(changed),
              worst);
  EXPECT_GT(worst, 10 * kShortBound);
  fs::remove_all(dst);
}

}  // namespace
}  // namespace ft
