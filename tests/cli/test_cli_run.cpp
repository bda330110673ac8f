// `ft run --prompt` against `ft run --tokens`: the text path encodes the prompt as the tokenizer library does
// (itself checked against Hugging Face tokenizers) and prints exactly the decode of the greedy ids.
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "cli_runner.h"
#include "tokenizer/tokenizer.h"

namespace ft {
namespace {

const std::string kModel = std::string(FT_TEST_DATA) + "/models/qwen3_moe";

// "1,2,3\n" -> {1, 2, 3}
std::vector<int32_t> parse_ids(const std::string& line) {
  std::vector<int32_t> ids;
  std::stringstream ss(line);
  std::string item;
  while (std::getline(ss, item, ',')) ids.push_back(std::stoi(item));
  return ids;
}

TEST(CliRun, PromptTextEqualsTheDecodeOfTheGreedyIds) {
  auto tok = tok::Tokenizer::load(kModel);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const std::string prompt = "Once upon a time, in a land far away";
  const auto prompt_ids = (*tok)->encode(prompt, true);
  std::string csv;
  for (int32_t id : prompt_ids) {
    if (!csv.empty()) csv += ',';
    csv += std::to_string(id);
  }

  auto by_ids = test::run_ft("run --model " + test::shell_quote(kModel) + " --tokens " + csv + " --max-tokens 20");
  ASSERT_EQ(by_ids.exit_code, 0) << by_ids.err;
  const auto generated = parse_ids(by_ids.out);
  ASSERT_FALSE(generated.empty());

  auto by_text = test::run_ft("run --model " + test::shell_quote(kModel) + " --prompt " + test::shell_quote(prompt) +
                              " --max-tokens 20");
  ASSERT_EQ(by_text.exit_code, 0) << by_text.err;
  EXPECT_EQ(by_text.out, (*tok)->decode(generated, true) + "\n");
}

TEST(CliRun, ExactlyOnePromptFlag) {
  auto neither = test::run_ft("run --model " + test::shell_quote(kModel));
  EXPECT_EQ(neither.exit_code, 1);
  EXPECT_NE(neither.err.find("--prompt"), std::string::npos) << neither.err;
  auto both = test::run_ft("run --model " + test::shell_quote(kModel) + " --tokens 1 --prompt x");
  EXPECT_EQ(both.exit_code, 1);
}

TEST(CliRun, ChatPromptRendersTheTemplate) {
  // qwen3_moe carries Qwen3's chat template.
  auto ok = test::run_ft("run --model " + test::shell_quote(kModel) + " --prompt hi --chat --max-tokens 3");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

}  // namespace
}  // namespace ft
