// Chat renders of Qwen3, DeepSeek-V3 and Llama-3 against the texts transformers 5.17 apply_chat_template
// produced (tests/data/chat/hf_chat_reference.json, from ../shared/fixtures/tokenizers/tokenizer_reference.json).
#include <gtest/gtest.h>

#include "jinja_ref/jinja2_reference.h"
#include "tokenizer/chat_template.h"

namespace ft::tok {
namespace {

TEST(ChatTemplateHf, ReferenceRendersAreIdentical) {
  const std::string data = std::string(FT_TEST_DATA) + "/chat/";
  auto ref = nlohmann::ordered_json::parse(test::read_file(data + "hf_chat_reference.json"));
  int checked = 0;
  for (const auto& [name, cases] : ref["chat"].items()) {
    auto config = load_chat_config(data + name);
    ASSERT_TRUE(config.ok()) << config.status().to_string();
    for (size_t i = 0; i < cases.size(); ++i) {
      nlohmann::ordered_json request = cases[i]["conversation"];
      request["add_generation_prompt"] = cases[i]["add_generation_prompt"];
      auto ctx = make_render_context(*config, request);
      ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
      auto text = config->chat_template.render(*ctx);
      ASSERT_TRUE(text.ok()) << name << " case " << i << ": " << text.status().to_string();
      const std::string want = cases[i]["text"].get<std::string>();
      EXPECT_EQ(text.value(), want) << name << " case " << i << " " << test::first_difference(text.value(), want);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 36);
}

}  // namespace
}  // namespace ft::tok
