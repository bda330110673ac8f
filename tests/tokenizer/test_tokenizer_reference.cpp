// Encode and decode of four real tokenizers against tokenizer_reference.json (HF tokenizers, Rust).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_tokenizer_data.h"

namespace ft::tok {
namespace {

using testing::load_tokenizer;
using testing::reference;

class ReferenceTest : public ::testing::TestWithParam<std::string> {};

std::string ids_string(const std::vector<int32_t>& ids) { return nlohmann::json(ids).dump(); }

TEST_P(ReferenceTest, EncodeMatchesHuggingFace) {
  const Tokenizer& tok = load_tokenizer(GetParam());
  const auto& corpus = reference()["corpus"];
  const auto& expected = reference()["tokenizers"][GetParam()]["encode"];
  ASSERT_EQ(corpus.size(), expected.size());
  int mismatches = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const auto ids = tok.encode(corpus[i].get<std::string>(), false);
    const auto want = expected[i].get<std::vector<int32_t>>();
    if (ids != want && ++mismatches <= 10)
      ADD_FAILURE() << "corpus[" << i << "] " << corpus[i].dump() << "\n  ours " << ids_string(ids) << "\n  HF   "
                    << ids_string(want);
  }
  EXPECT_EQ(mismatches, 0) << "of " << corpus.size() << " strings";
}

TEST_P(ReferenceTest, DecodeRoundTripMatchesHuggingFace) {
  const Tokenizer& tok = load_tokenizer(GetParam());
  const auto& ref = reference()["tokenizers"][GetParam()];
  int mismatches = 0;
  for (size_t i = 0; i < ref["encode"].size(); ++i) {
    const auto ids = ref["encode"][i].get<std::vector<int32_t>>();
    const std::string text = tok.decode(ids, false);
    const std::string want = ref["decode_roundtrip"][i].get<std::string>();
    if (text != want && ++mismatches <= 10)
      ADD_FAILURE() << "corpus[" << i << "]\n  ours " << nlohmann::json(text).dump() << "\n  HF   "
                    << nlohmann::json(want).dump();
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_P(ReferenceTest, ChatPromptIdsMatchHuggingFace) {
  // The rendered chat prompts of the reference, tokenized as transformers did (no added BOS).
  const Tokenizer& tok = load_tokenizer(GetParam());
  for (const auto& chat : reference()["tokenizers"][GetParam()]["chat"]) {
    if (!chat.contains("text") || !chat.contains("ids")) continue;
    EXPECT_EQ(ids_string(tok.encode(chat["text"].get<std::string>(), false)), chat["ids"].dump());
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, ReferenceTest, ::testing::ValuesIn(testing::reference_tokenizers()),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace ft::tok
