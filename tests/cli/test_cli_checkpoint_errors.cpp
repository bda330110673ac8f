// `ft logits` on broken checkpoints and bad flags: a non-zero exit and exactly one stderr line naming the
// file, tensor or flag (checked against the defect each case plants; checkpoints are made here).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "cli_runner.h"

namespace fs = std::filesystem;

namespace ft {
namespace {

const fs::path kFixture = fs::path(FT_TEST_DATA) / "models" / "qwen3_dense";

class CheckpointErrors : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ft_cli_ckpt_" + std::to_string(::getpid()) + "_" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const char* f : {"config.json", "model.safetensors"}) fs::copy_file(kFixture / f, dir_ / f);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string read(const char* name) {
    std::ifstream in(dir_ / name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void write(const char* name, const std::string& bytes) {
    std::ofstream out(dir_ / name, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  // Replaces the first occurrence of `from` in a file (same length keeps the safetensors offsets valid).
  void patch(const char* name, const std::string& from, const std::string& to) {
    std::string s = read(name);
    auto at = s.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    s.replace(at, from.size(), to);
    write(name, s);
  }

  // Runs ft logits and checks: exit 1, one line on stderr, containing every `needles`.
  void expect_error(std::initializer_list<std::string> needles, const std::string& extra = "") {
    auto r = test::run_ft("logits --model " + test::shell_quote(dir_.string()) + " --tokens 1,2,3 --out " +
                          test::shell_quote((dir_ / "out.safetensors").string()) + " " + extra);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
    for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "'" << n << "' not in: " << r.err;
  }

  fs::path dir_;
};

TEST_F(CheckpointErrors, HealthyCopyWorks) {
  auto r = test::run_ft("logits --model " + test::shell_quote(dir_.string()) + " --tokens 1,2,3 --out " +
                        test::shell_quote((dir_ / "out.safetensors").string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "out.safetensors"));
}

TEST_F(CheckpointErrors, MissingDirectory) {
  fs::remove_all(dir_);
  expect_error({"config.json"});
}

TEST_F(CheckpointErrors, ConfigNotJson) {
  write("config.json", "{\"architectures\": [\"Qwen3ForCausalLM\"], ");
  expect_error({"config.json", "not a JSON object"});
}

TEST_F(CheckpointErrors, ConfigMissingKey) {
  patch("config.json", "\"hidden_size\"", "\"hidden_sizX\"");
  expect_error({"config.json", "hidden_size"});
}

TEST_F(CheckpointErrors, ConfigWrongType) {
  patch("config.json", "\"num_hidden_layers\": 3", "\"num_hidden_layers\": \"3\"");
  expect_error({"config.json", "num_hidden_layers"});
}

TEST_F(CheckpointErrors, UnknownArchitecture) {
  patch("config.json", "Qwen3ForCausalLM", "Qwen9ForCausalLM");
  expect_error({"Qwen9ForCausalLM", "not supported"});
}

TEST_F(CheckpointErrors, MissingTensor) {
  patch("model.safetensors", "model.norm.weight", "model.norX.weight");
  expect_error({"model.norm.weight", "not found"});
}

TEST_F(CheckpointErrors, TensorShapeDisagreesWithConfig) {
  patch("config.json", "\"intermediate_size\": 128", "\"intermediate_size\": 96 ");
  expect_error({"mlp.gate_proj.weight", "[128, 64]", "[96, 64]"});
}

// DeepSeek-V3's latent attention dims and expert groups are checked with the config, before any weight is read.
TEST_F(CheckpointErrors, BadLatentDimsAndExpertGroupsNamed) {
  const fs::path deepseek = fs::path(FT_TEST_DATA) / "models" / "deepseek_v3";
  const auto fresh = [&] {
    for (const char* f : {"config.json", "model.safetensors"})
      fs::copy_file(deepseek / f, dir_ / f, fs::copy_options::overwrite_existing);
  };
  fresh();
  patch("config.json", "\"v_head_dim\": 16", "\"v_head_dim\": -1");
  expect_error({"config.json", "v_head_dim"});
  fresh();
  patch("config.json", "\"n_group\": 2", "\"n_group\": 3");
  expect_error({"config.json", "n_group 3"});
}

// gpt-oss's sinks, router and expert biases are optional to the shared layers; the architecture requires them.
TEST_F(CheckpointErrors, GptOssTensorMissingNamed) {
  const fs::path gpt_oss = fs::path(FT_TEST_DATA) / "models" / "gpt_oss";
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(gpt_oss / f, dir_ / f, fs::copy_options::overwrite_existing);
  patch("model.safetensors", "model.layers.1.self_attn.sinks", "model.layers.1.self_attn.sinkz");
  expect_error({"model.layers.1.self_attn.sinks", "not found"});
}

// MXFP4 experts, resident and copied into a host expert store (--moe-backend cpu): a missing scale tensor, and blocks
// whose shape the config does not imply (an intermediate size of 48 where the checkpoint's rows hold 32).
TEST_F(CheckpointErrors, Mxfp4ExpertsNamed) {
  const fs::path mxfp4 = fs::path(FT_TEST_DATA) / "models_mxfp4" / "gpt_oss";
  for (const char* flags : {"", "--moe-backend cpu"}) {
    for (const char* f : {"config.json", "model.safetensors"})
      fs::copy_file(mxfp4 / f, dir_ / f, fs::copy_options::overwrite_existing);
    patch("model.safetensors", "model.layers.2.mlp.experts.down_proj_scales",
          "model.layers.2.mlp.experts.down_proj_scalez");
    expect_error({"model.layers.2.mlp.experts.down_proj_scales", "not found"}, flags);
    fs::copy_file(mxfp4 / "model.safetensors", dir_ / "model.safetensors", fs::copy_options::overwrite_existing);
    patch("config.json", "\"intermediate_size\": 32", "\"intermediate_size\": 48");
    expect_error({"model.layers.0.mlp.experts.gate_up_proj", "shape"}, flags);
  }
}

TEST_F(CheckpointErrors, TruncatedSafetensors) {
  std::string s = read("model.safetensors");
  write("model.safetensors", s.substr(0, s.size() - 1000));
  expect_error({"model.safetensors"});
}

TEST_F(CheckpointErrors, UnknownDtype) {
  patch("model.safetensors", "\"BF16\"", "\"BX16\"");
  expect_error({"model.safetensors", "BX16"});
}

TEST_F(CheckpointErrors, HeaderLengthBeyondFile) {
  std::string s = read("model.safetensors");
  s[7] = '\x7f';
  write("model.safetensors", s);
  expect_error({"model.safetensors"});
}

TEST(CliFlags, UnknownFlagNamed) {
  auto r = test::run_ft("logits --model x --tokens 1 --out y --bogus 3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
}

TEST(CliFlags, BadTokenListNamed) {
  auto r = test::run_ft("logits --model x --tokens 1,a --out y");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--tokens"), std::string::npos) << r.err;
}

TEST(CliFlags, MissingRequiredFlagNamed) {
  auto r = test::run_ft("logits --tokens 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
}

TEST(CliFlags, BadExpertPlacementFlagsNamed) {
  const fs::path moe = fs::path(FT_TEST_DATA) / "models" / "qwen3_moe";
  const std::string out = test::shell_quote((fs::path(testing::TempDir()) / "never_written.safetensors").string());
  const std::string model = " --model " + test::shell_quote(moe.string()) + " --tokens 1,2 --out " + out;
  struct Case {
    const char* flags;
    const char* named;
  };
  for (const Case& c : {Case{"--moe-backend gpu", "--moe-backend"}, Case{"--moe-strategy gpu", "--moe-strategy"},
                        Case{"--moe-strategy cpu --moe-backend cpu", "--moe-strategy"},
                        Case{"--moe-cpu-threads -2", "--moe-cpu-threads"}, Case{"--moe-cache-rate 2", "--moe-cache-rate"},
                        Case{"--moe-cache-size -1", "--moe-cache-size"},
                        Case{"--kv-reserve-tokens x", "--kv-reserve-tokens"},
                        Case{"--moe-backend offload --moe-cache-size 1", "--moe-cache-size"}}) {
    auto r = test::run_ft("logits" + model + " " + c.flags);
    EXPECT_EQ(r.exit_code, 1) << c.flags;
    EXPECT_NE(r.err.find(c.named), std::string::npos) << c.flags << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.flags << ": " << r.err;
  }
}

TEST(CliFlags, HelpDescribesEveryFlag) {
  auto r = test::run_ft("logits --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"--model", "--tokens", "--out", "--chunk", "--device", "--dtype", "--threads",
                           "--moe-strategy", "--moe-backend", "--moe-cache-size", "--moe-cache-rate", "--kv-reserve-tokens",
                           "--moe-cpu-threads"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
}

TEST(CliFlags, TokenOutOfVocabularyIsAnError) {
  auto r = test::run_ft("run --model " + test::shell_quote((kFixture).string()) + " --tokens 1,512");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("512"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ft
