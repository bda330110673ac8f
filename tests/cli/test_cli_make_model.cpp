// `ft make-model` for Qwen3.5-MoE, DeepSeek-V3 and gpt-oss (bf16 or MXFP4 experts): the checkpoint has exactly the
// tensor names, shapes and dtype of the transformers-made fixture of the same config, the same seed writes the same
// bytes, and `ft logits` loads it (every tensor used) and returns finite logits; the multimodal layout (text_config)
// loads the same way.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "io/safetensors.h"

namespace fs = std::filesystem;

namespace ft {
namespace {

const fs::path kFixtures = fs::path(FT_TEST_DATA) / "models";
const fs::path kFixture = kFixtures / "qwen3_5_moe";

class MakeModel : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ft_cli_make_model_" + std::to_string(::getpid()) + "_" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // ft make-model CONFIG -> dir_/OUT; returns the checkpoint directory.
  fs::path make(const fs::path& config, const std::string& out, const std::string& extra) {
    const fs::path model = dir_ / out;
    auto r = test::run_ft("make-model --config " + test::shell_quote(config.string()) + " --out " +
                          test::shell_quote(model.string()) + " " + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("wrote "), std::string::npos) << r.out;
    return model;
  }

  // ft logits on `model`: exit 0, no unused-tensor warning, [3, vocab] finite logits.
  void expect_loads(const fs::path& model, int64_t vocab) {
    const fs::path out = dir_ / "logits.safetensors";
    auto r = test::run_ft("logits --model " + test::shell_quote(model.string()) + " --tokens 1,2,3 --out " +
                          test::shell_quote(out.string()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("unused checkpoint tensor"), std::string::npos) << r.err;
    auto file = SafetensorsFile::open(out.string());
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    const TensorInfo* logits = (*file)->find("logits");
    ASSERT_NE(logits, nullptr);
    ASSERT_EQ(logits->shape, (std::vector<int64_t>{3, vocab}));
    const auto* v = reinterpret_cast<const float*>((*file)->tensor_data(*logits));
    for (int64_t i = 0; i < 3 * vocab; ++i) ASSERT_TRUE(std::isfinite(v[i])) << "logit " << i;
  }

  // make-model on the fixture's config: the fixture's tensor names, shapes and dtypes; loads; a seed's bytes repeat.
  void expect_fixture_layout(const fs::path& fixture_dir, const std::string& layers, const std::string& extra = "") {
    fs::copy_file(fixture_dir / "config.json", dir_ / "config.json");
    const fs::path model = make(dir_ / "config.json", "a", "--layers " + layers + " --seed 7 " + extra);
    auto made = SafetensorsFile::open((model / "model.safetensors").string());
    auto fixture = SafetensorsFile::open((fixture_dir / "model.safetensors").string());
    ASSERT_TRUE(made.ok()) << made.status().to_string();
    ASSERT_TRUE(fixture.ok()) << fixture.status().to_string();
    const auto& want = (*fixture)->tensors();  // both sorted by name
    const auto& got = (*made)->tensors();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].name, want[i].name);
      EXPECT_EQ(got[i].shape, want[i].shape) << want[i].name;
      EXPECT_EQ(got[i].dtype, want[i].dtype) << want[i].name;
    }
    expect_loads(model, 512);

    const fs::path again = make(dir_ / "config.json", "b", "--layers " + layers + " --seed 7 " + extra);
    EXPECT_TRUE(read(model / "model.safetensors") == read(again / "model.safetensors")) << "same seed, other bytes";
  }

  fs::path dir_;
};

TEST_F(MakeModel, Qwen35MoeHasTheFixtureLayoutAndLoads) { expect_fixture_layout(kFixture, "4"); }

// Latent attention with q_lora, a dense first layer, the router's correction bias and a shared expert.
TEST_F(MakeModel, DeepseekV3HasTheFixtureLayoutAndLoads) { expect_fixture_layout(kFixtures / "deepseek_v3", "3"); }

TEST_F(MakeModel, GptOssHasTheFixtureLayoutAndLoads) { expect_fixture_layout(kFixtures / "gpt_oss", "4"); }

// Experts in MXFP4: the layout of the fixture whose experts transformers' MXFP4 integration reads.
TEST_F(MakeModel, GptOssMxfp4HasTheFixtureLayoutAndLoads) {
  expect_fixture_layout(fs::path(FT_TEST_DATA) / "models_mxfp4" / "gpt_oss", "4", "--mxfp4-experts");
  const nlohmann::json config = nlohmann::json::parse(read(dir_ / "a" / "config.json"));
  EXPECT_EQ(config["quantization_config"]["quant_method"], "mxfp4");
}

TEST_F(MakeModel, Mxfp4ExpertsAreGptOssOnly) {
  fs::copy_file(kFixture / "config.json", dir_ / "config.json");
  auto r = test::run_ft("make-model --config " + test::shell_quote((dir_ / "config.json").string()) + " --out " +
                        test::shell_quote((dir_ / "x").string()) + " --mxfp4-experts");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("GptOssForCausalLM only"), std::string::npos) << r.err;
}

TEST_F(MakeModel, Qwen35MoeMultimodalLayoutLoads) {
  // Qwen3_5MoeForConditionalGeneration keeps the text config under text_config and the text model under
  // model.language_model; --layers 8 repeats the 3:1 layer_types pattern.
  const nlohmann::json text = nlohmann::json::parse(read(kFixture / "config.json"));
  const nlohmann::json top = {{"architectures", {"Qwen3_5MoeForConditionalGeneration"}},
                              {"model_type", "qwen3_5_moe"},
                              {"tie_word_embeddings", false},
                              {"text_config", text}};
  std::ofstream(dir_ / "config.json") << top.dump(2);
  const fs::path model = make(dir_ / "config.json", "mm", "--layers 8");
  auto made = SafetensorsFile::open((model / "model.safetensors").string());
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  EXPECT_NE((*made)->find("model.language_model.layers.7.self_attn.q_proj.weight"), nullptr);
  EXPECT_NE((*made)->find("model.language_model.layers.6.linear_attn.in_proj_qkv.weight"), nullptr);
  EXPECT_NE((*made)->find("lm_head.weight"), nullptr);
  EXPECT_EQ((*made)->find("model.embed_tokens.weight"), nullptr);
  expect_loads(model, 512);
}

}  // namespace
}  // namespace ft
