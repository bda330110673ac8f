// TextStream: streamed text equals the tokenizer's decode of all ids cut before the earliest stop string
// (the reference is computed with std::string::find on the one-shot decode), never contains the stop text,
// and every piece is whole UTF-8 — on the toy tokenizer of the fixture model (byte-level BPE).
#include <random>

#include <gtest/gtest.h>

#include "sched/text_stream.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace ft {
namespace {

const tok::Tokenizer& toy() {
  static auto t = tok::Tokenizer::load(std::string(FT_TEST_DATA) + "/models/qwen3_moe");
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return **t;
}

struct Streamed {
  std::vector<std::string> pieces;
  std::string text;
  bool stopped = false;
  size_t tokens_read = 0;  // ids pushed before the stop
};

Streamed stream(const std::vector<int32_t>& ids, std::vector<std::string> stops) {
  TextStream ts(toy(), std::move(stops), true);
  Streamed s;
  for (int32_t id : ids) {
    s.pieces.push_back(ts.push(id));
    ++s.tokens_read;
    if (ts.stopped()) break;
  }
  s.pieces.push_back(ts.finish());
  s.stopped = ts.stopped();
  for (const auto& p : s.pieces) s.text += p;
  return s;
}

// The reference: decode everything, cut before the earliest occurrence of any stop string.
std::string reference(const std::vector<int32_t>& ids, const std::vector<std::string>& stops, bool& matched) {
  const std::string all = toy().decode(ids, true);
  size_t cut = std::string::npos;
  for (const auto& s : stops) cut = std::min(cut, all.find(s));
  matched = cut != std::string::npos;
  return matched ? all.substr(0, cut) : all;
}

void expect_whole_utf8(const Streamed& s) {
  for (const auto& p : s.pieces) EXPECT_TRUE(tok::utf8_is_valid(p)) << "piece splits a character";
}

TEST(TextStream, NoStopStringsGivesTheFullDecode) {
  const auto ids = toy().encode("Hello, wörld! 世界 🎉 done.", false);
  const Streamed s = stream(ids, {});
  EXPECT_EQ(s.text, toy().decode(ids, true));
  EXPECT_FALSE(s.stopped);
  expect_whole_utf8(s);
}

TEST(TextStream, StopStringAcrossTokenBoundariesIsCutAndNeverEmitted) {
  const auto ids = toy().encode("The answer is 42. STOP here and more text after", false);
  const Streamed s = stream(ids, {"STOP"});
  EXPECT_EQ(s.text, "The answer is 42. ");
  EXPECT_TRUE(s.stopped);
  EXPECT_LT(s.tokens_read, ids.size()) << "the stop must be seen as soon as its last token arrives";
  for (const auto& p : s.pieces) EXPECT_EQ(p.find("ST"), std::string::npos) << "held-back prefix leaked: " << p;
}

TEST(TextStream, PossibleStopPrefixIsHeldBackThenReleased) {
  TextStream ts(toy(), {"STOP"}, true);
  std::string got;
  for (int32_t id : toy().encode("abc STO", false)) got += ts.push(id);
  EXPECT_EQ(got, "abc ") << "\"STO\" could start \"STOP\" and must be held";
  got += ts.finish();
  EXPECT_EQ(got, "abc STO");
  EXPECT_FALSE(ts.stopped());
}

TEST(TextStream, MultiByteStopAndText) {
  const auto ids = toy().encode("naïve café → 世界和平 🎉 end", false);
  for (const std::string stop : {"世", "界和", "🎉", "é →", "naï"}) {
    bool matched = false;
    const std::string want = reference(ids, {stop}, matched);
    const Streamed s = stream(ids, {stop});
    EXPECT_TRUE(matched);
    EXPECT_EQ(s.text, want) << "stop " << stop;
    EXPECT_TRUE(s.stopped);
    expect_whole_utf8(s);
  }
}

TEST(TextStream, EarliestOfSeveralStopsWins) {
  const auto ids = toy().encode("one two three four", false);
  TextStream ts(toy(), {"four", "two", "three"}, true);
  std::string got;
  for (int32_t id : ids) got += ts.push(id);
  got += ts.finish();
  EXPECT_EQ(got, "one ");
  EXPECT_EQ(ts.matched_stop(), "two");
}

TEST(TextStream, TheFirstStopToCompleteWins) {
  // "xyzIfx8" would start earlier, but "I" is complete first: the stream cannot wait for the longer one.
  const auto ids = toy().encode("ab xyzIfx8 cd", false);
  TextStream ts(toy(), {"xyzIfx8", "I"}, true);
  std::string got;
  for (int32_t id : ids) got += ts.push(id);
  got += ts.finish();
  EXPECT_EQ(got, "ab xyz");
  EXPECT_EQ(ts.matched_stop(), "I");
}

TEST(TextStream, RandomIdsAndStopsTakenFromTheirDecodeMatchTheReference) {
  std::mt19937 rng(1234);
  const int32_t vocab = toy().vocab_size() - 3;  // plain byte-level tokens, no special ones
  int n_matched = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<int32_t> ids(3 + rng() % 40);
    for (auto& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
    const std::string all = toy().decode(ids, true);
    // One stop string that may occur (plus one that never does): the first completed is the earliest.
    std::vector<std::string> stops = {"\x01never"};
    if (!all.empty() && rng() % 8 != 0) stops.push_back(all.substr(rng() % all.size(), 1 + rng() % 6));
    bool matched = false;
    const std::string want = reference(ids, stops, matched);
    const Streamed s = stream(ids, stops);
    n_matched += matched;
    ASSERT_EQ(s.text, want) << "trial " << trial;
    ASSERT_EQ(s.stopped, matched) << "trial " << trial;
  }
  EXPECT_GT(n_matched, 200);
}

}  // namespace
}  // namespace ft
