// Reasoning and tool-call parsers on crafted model output, fed whole and split at every byte (a stream may
// cut anywhere): the pieces must add up to the one-shot split, and no tag text may leak. The expected
// splits are written by hand from the Qwen3 output format (<think>...</think>, <tool_call>{json}</tool_call>).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/output_parser.h"

namespace ft::server {
namespace {

OutputParserOptions options(bool reasoning, bool start_inside, bool tools) {
  OutputParserOptions o;
  o.reasoning.enabled = reasoning;
  o.reasoning.start_inside = start_inside;
  o.tools.enabled = tools;
  return o;
}

// Feeds `text` in pieces of `step` bytes and returns everything the parser produced; with `check_leaks`,
// no piece may hold a tag.
ParsedOutput run(const OutputParserOptions& o, const std::string& text, size_t step, bool check_leaks = true) {
  OutputParser p(o);
  ParsedOutput all;
  auto add = [&](ParsedOutput d) {
    all.reasoning += d.reasoning;
    all.content += d.content;
    for (auto& c : d.calls) all.calls.push_back(std::move(c));
  };
  for (size_t i = 0; i < text.size(); i += step) {
    ParsedOutput d = p.push(std::string_view(text).substr(i, step));
    for (const std::string tag : {"<think", "</think", "<tool_call", "</tool_call"}) {
      if (!check_leaks) break;
      EXPECT_EQ(d.content.find(tag), std::string::npos) << "tag leaked into content at step " << step;
      EXPECT_EQ(d.reasoning.find(tag), std::string::npos) << "tag leaked into reasoning at step " << step;
    }
    add(std::move(d));
  }
  add(p.finish());
  return all;
}

// Every split of the text gives the same result.
ParsedOutput run_all_splits(const OutputParserOptions& o, const std::string& text) {
  const ParsedOutput whole = run(o, text, text.size() + 1);
  for (size_t step = 1; step <= 13; ++step) {
    const ParsedOutput s = run(o, text, step);
    EXPECT_EQ(s.reasoning, whole.reasoning) << "step " << step;
    EXPECT_EQ(s.content, whole.content) << "step " << step;
    EXPECT_EQ(s.calls.size(), whole.calls.size()) << "step " << step;
  }
  return whole;
}

TEST(ReasoningParser, ThinkBlockOpenedByTheModel) {
  const auto r = run_all_splits(options(true, false, false), "<think>\nLet me see.\n</think>\n\nThe answer is 4.");
  EXPECT_EQ(r.reasoning, "\nLet me see.\n");
  EXPECT_EQ(r.content, "The answer is 4.");
}

TEST(ReasoningParser, ThinkBlockOpenedByThePrompt) {
  const auto r = run_all_splits(options(true, true, false), "hmm, 2+2</think>\n\n4");
  EXPECT_EQ(r.reasoning, "hmm, 2+2");
  EXPECT_EQ(r.content, "4");
}

TEST(ReasoningParser, NoThinkBlockIsAllContent) {
  const auto r = run_all_splits(options(true, false, false), "<thin is not a tag; plain answer");
  EXPECT_EQ(r.reasoning, "");
  EXPECT_EQ(r.content, "<thin is not a tag; plain answer");
}

TEST(ReasoningParser, DisabledKeepsTagsAsContent) {
  const std::string text = "<think>x</think>y";
  const auto r = run(options(false, false, false), text, 3, false);
  EXPECT_EQ(r.content, text);
  EXPECT_EQ(r.reasoning, "");
}

TEST(ReasoningParser, UnterminatedThinkIsReasoning) {
  const auto r = run_all_splits(options(true, false, false), "<think>still thinking when max_tokens hit");
  EXPECT_EQ(r.reasoning, "still thinking when max_tokens hit");
  EXPECT_EQ(r.content, "");
}

TEST(ToolCallParser, QwenToolCallsBecomeCalls) {
  const std::string text =
      "I'll check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>";
  const auto r = run_all_splits(options(false, false, true), text);
  EXPECT_EQ(r.content, "I'll check.");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(r.calls[0].arguments), nlohmann::json::parse(R"({"city":"Paris","unit":"c"})"));
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris","unit":"c"})") << "key order is the model's";
  EXPECT_EQ(r.calls[1].name, "get_time");
}

TEST(ToolCallParser, ReasoningThenToolCall) {
  const std::string text =
      "<think>\nneed weather\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>";
  const auto r = run_all_splits(options(true, false, true), text);
  EXPECT_EQ(r.reasoning, "\nneed weather\n");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, "{}");
}

TEST(ToolCallParser, InvalidBlockStaysContentVerbatim) {
  const std::string text = "a <tool_call>not json</tool_call> b";
  const auto r = run(options(false, false, true), text, 4, false);
  EXPECT_EQ(r.content, "a<tool_call>not json</tool_call> b") << "the space before the block is dropped";
  EXPECT_TRUE(r.calls.empty());
}

TEST(ToolCallParser, ArgumentsGivenAsAStringArePassedThrough) {
  const auto r = run_all_splits(options(false, false, true),
                                "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, "{\"a\": 1}");
}

TEST(ToolCallParser, ToolsOffLeavesTextAlone) {
  const std::string text = "<tool_call>{\"name\": \"f\"}</tool_call>";
  EXPECT_EQ(run(options(false, false, false), text, 2, false).content, text);
}

TEST(ToolCallParser, ForcedNamedCallCutShortKeepsItsName) {
  OutputParserOptions o = options(false, false, true);
  o.tools.forced = true;
  o.tools.forced_body = "\n{\"name\": \"get_weather\", \"arguments\": ";
  o.tools.forced_name = "get_weather";
  const auto cut = run(o, "{\"city\": \"Pa", 3);
  ASSERT_EQ(cut.calls.size(), 1u);
  EXPECT_EQ(cut.calls[0].name, "get_weather");
  EXPECT_EQ(cut.calls[0].arguments, "{\"city\": \"Pa");
  const auto whole = run(o, "{\"city\": \"Paris\"}}\n</tool_call>", 5);
  ASSERT_EQ(whole.calls.size(), 1u);
  EXPECT_EQ(whole.calls[0].arguments, R"({"city":"Paris"})");
}

TEST(ToolCallParser, UnterminatedUnforcedBlockIsContent) {
  const auto r = run(options(false, false, true), "x <tool_call>{\"name\"", 1, false);
  EXPECT_EQ(r.content, "x<tool_call>{\"name\"");
}

}  // namespace
}  // namespace ft::server
