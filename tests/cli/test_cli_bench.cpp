// `ft bench engine` on a fixture model: requests through the engine end to end, the steady window's token count
// within what the requests generated, and bad flags answered with one line naming the flag.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "cli_runner.h"

namespace ft {
namespace {

const std::string kModel = std::string(FT_TEST_DATA) + "/models/qwen3_moe";

TEST(CliBenchEngine, ReportsTheSteadyWindow) {
  auto r = test::run_ft("bench engine --model " + test::shell_quote(kModel) +
                        " --batch 2 --tokens 24 --temperature 0.7 --top-k 20 --top-p 0.8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(([0-9.]+) tok/s \(([0-9]+) tokens in ([0-9.]+) ms\))")))
      << r.out;
  const double rate = std::stod(m[1]), ms = std::stod(m[3]);
  const int tokens = std::stoi(m[2]);
  // Two requests of 24 tokens: the window starts after both first tokens, so at most 2 x 23 lie inside it.
  EXPECT_GT(tokens, 0);
  EXPECT_LE(tokens, 46);
  EXPECT_NEAR(rate, tokens / (ms / 1e3), rate * 0.01);
}

TEST(CliBenchEngine, BadFlagsNameTheFlag) {
  auto batch = test::run_ft("bench engine --model " + test::shell_quote(kModel) + " --batch 0");
  EXPECT_EQ(batch.exit_code, 1);
  EXPECT_NE(batch.err.find("--batch"), std::string::npos) << batch.err;
  auto dtype = test::run_ft("bench engine --model " + test::shell_quote(kModel) + " --dtype f16");
  EXPECT_EQ(dtype.exit_code, 1);
  EXPECT_NE(dtype.err.find("f16"), std::string::npos) << dtype.err;
  auto missing = test::run_ft("bench engine --model /nonexistent/model");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/model"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace ft
