// IncrementalDecoder: its streamed pieces concatenate to the full decode and never split a character.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_tokenizer_data.h"
#include "tokenizer/incremental_decoder.h"
#include "tokenizer/utf8.h"

namespace ft::tok {
namespace {

using testing::load_tokenizer;
using testing::reference;

// Streams `ids` one by one; checks every piece is whole UTF-8 and returns the concatenation.
std::string stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special) {
  IncrementalDecoder dec(tok, skip_special);
  std::string all;
  for (int32_t id : ids) {
    const std::string piece = dec.push(id);
    EXPECT_TRUE(utf8_is_valid(piece)) << nlohmann::json(ids).dump();
    all += piece;
  }
  return all + dec.finish();
}

class IncrementalTest : public ::testing::TestWithParam<std::string> {};

TEST_P(IncrementalTest, ConcatenationEqualsReferenceDecodeOnCorpus) {
  // Expected text: HF tokenizers' decode of the reference ids (decode_roundtrip).
  const Tokenizer& tok = load_tokenizer(GetParam());
  const auto& ref = reference()["tokenizers"][GetParam()];
  for (size_t i = 0; i < ref["encode"].size(); ++i) {
    const auto ids = ref["encode"][i].get<std::vector<int32_t>>();
    EXPECT_EQ(stream(tok, ids, false), ref["decode_roundtrip"][i].get<std::string>()) << "corpus[" << i << "]";
    EXPECT_EQ(stream(tok, ids, true), tok.decode(ids, true)) << "corpus[" << i << "] skipping special tokens";
  }
}

TEST_P(IncrementalTest, HoldsBackSplitCharacters) {
  // Emoji and CJK split over several byte-level tokens: no piece may carry U+FFFD (invariant:
  // the input has none), and each emoji appears only once all of its tokens have arrived.
  const Tokenizer& tok = load_tokenizer(GetParam());
  const std::string text = "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 \xf0\x9f\xa6\x80\xf0\x9f\x8f\xbd \xe7\xb9\x81\xe9\xab\x94";
  const auto ids = tok.encode(text, false);
  IncrementalDecoder dec(tok, false);
  std::string all;
  for (int32_t id : ids) {
    const std::string piece = dec.push(id);
    EXPECT_EQ(piece.find("\xef\xbf\xbd"), std::string::npos);
    all += piece;
  }
  all += dec.finish();
  EXPECT_EQ(all, text);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, IncrementalTest, ::testing::ValuesIn(testing::reference_tokenizers()),
                         [](const auto& param_info) { return param_info.param; });

TEST(IncrementalDecoder, PartialCharacterIsReleasedByFinish) {
  // CLIENTS.md: HF decodes qwen3 [145367, 378] to "👨\ufffd" (the second token is half a ZWJ).
  const Tokenizer& tok = load_tokenizer("qwen3");
  const std::vector<int32_t> ids = {145367, 378};
  EXPECT_EQ(tok.decode(ids, false), "\xf0\x9f\x91\xa8\xef\xbf\xbd");
  IncrementalDecoder dec(tok, false);
  EXPECT_EQ(dec.push(145367), "\xf0\x9f\x91\xa8");
  EXPECT_EQ(dec.push(378), "");
  EXPECT_EQ(dec.finish(), "\xef\xbf\xbd");
}

}  // namespace
}  // namespace ft::tok
