// Chat templates of Qwen3, Qwen3.6, DeepSeek-V3, DeepSeek-R1, Llama-3, GLM-4.6 and gpt-oss rendered over
// tests/data/chat/conversations.json, checked byte for byte against real Jinja2 configured as transformers
// configures it (tests/tokenizer/jinja_ref/render.py, run at test time). Where Jinja2 fails, we must fail too.
#include <gtest/gtest.h>

#include "jinja_ref/jinja2_reference.h"
#include "tokenizer/chat_template.h"

namespace ft::tok {
namespace {

const char* const kTemplates[] = {"qwen3", "qwen3_6", "deepseek_v3", "deepseek_r1", "llama3", "glm4_6", "gpt_oss"};

TEST(ChatTemplateJinja2, AllTemplatesAllConversations) {
  const std::string data = std::string(FT_TEST_DATA) + "/chat/";
  auto conversations = nlohmann::ordered_json::parse(test::read_file(data + "conversations.json"));
  ASSERT_GT(conversations.size(), 40u);
  nlohmann::ordered_json jobs = nlohmann::ordered_json::array();
  for (const char* name : kTemplates)
    for (const auto& c : conversations) jobs.push_back({{"tokenizer_dir", data + name}, {"request", c}});
  auto expected = test::jinja2_render(jobs);
  ASSERT_EQ(expected.size(), jobs.size());

  int compared = 0, mismatches = 0;
  size_t j = 0;
  for (const char* name : kTemplates) {
    auto config = load_chat_config(data + name);
    ASSERT_TRUE(config.ok()) << config.status().to_string();
    int same = 0, both_failed = 0;
    for (size_t i = 0; i < conversations.size(); ++i, ++j) {
      const auto& want = expected[j];
      auto ctx = make_render_context(*config, conversations[i]);
      Result<std::string> got = ctx.ok() ? config->chat_template.render(*ctx) : Result<std::string>(ctx.status());
      ++compared;
      if (!want["ok"].get<bool>()) {
        if (got.ok()) {
          if (++mismatches <= 10)
            ADD_FAILURE() << name << " conversation " << i << ": Jinja2 failed (" << want["error"].get<std::string>()
                          << ") but we rendered";
        } else {
          ++both_failed;
        }
        continue;
      }
      if (!got.ok()) {
        if (++mismatches <= 10) ADD_FAILURE() << name << " conversation " << i << ": " << got.status().to_string();
        continue;
      }
      const std::string text = want["text"].get<std::string>();
      if (got.value() != text) {
        if (++mismatches <= 10)
          ADD_FAILURE() << name << " conversation " << i << " differs " << test::first_difference(got.value(), text);
        continue;
      }
      ++same;
    }
    std::printf("%-12s identical %d, both rejected %d, of %zu\n", name, same, both_failed, conversations.size());
  }
  EXPECT_EQ(mismatches, 0) << "of " << compared << " renders";
}

}  // namespace
}  // namespace ft::tok
