// Differential fuzz: ids and decodes of random strings against HF tokenizers (Rust), from fuzz/gen_fuzz.js.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "tokenizer/tokenizer.h"

namespace ft::tok {
namespace {

constexpr int kShownMismatches = 10;

nlohmann::json manifest() {
  const std::string path = std::string(FT_TOKENIZER_FUZZ_DIR) + "/manifest.json";
  auto text = read_text_file(path);
  if (!text.ok()) {
    ADD_FAILURE() << path << " is missing: run `ctest -R tokenizer_fuzz` (gen_fuzz.js writes it)";
    return nlohmann::json::array();
  }
  return nlohmann::json::parse(text.value());
}

TEST(TokenizerFuzz, IdenticalToHuggingFaceTokenizers) {
  const nlohmann::json entries = manifest();
  for (const auto& entry : entries) {
    const std::string name = entry["name"].get<std::string>();
    auto loaded = Tokenizer::load(entry["tokenizer"].get<std::string>());
    ASSERT_TRUE(loaded.ok()) << name << ": " << loaded.status().to_string();
    const Tokenizer& tok = *loaded.value();
    std::ifstream in(entry["cases"].get<std::string>());
    ASSERT_TRUE(in) << entry["cases"];
    std::string line;
    int cases = 0, mismatches = 0;
    while (std::getline(in, line)) {
      const auto c = nlohmann::json::parse(line);
      const std::string text = c["text"].get<std::string>();
      const auto want = c["ids"].get<std::vector<int32_t>>();
      const auto ids = tok.encode(text, false);
      const auto ids_special = tok.encode(text, true);
      const std::string decoded = tok.decode(want, false), skipped = tok.decode(want, true);
      ++cases;
      const bool same = ids == want && ids_special == c["ids_special"].get<std::vector<int32_t>>() &&
                        decoded == c["decoded"].get<std::string>() && skipped == c["decoded_skip"].get<std::string>();
      if (!same && ++mismatches <= kShownMismatches) {
        ADD_FAILURE() << name << " case " << cases << " " << c["text"].dump() << "\n  ours ids " << nlohmann::json(ids).dump()
                      << " special " << nlohmann::json(ids_special).dump() << " decode "
                      << nlohmann::json(decoded).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                      << " skip " << nlohmann::json(skipped).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                      << "\n  HF   " << line;
      }
    }
    EXPECT_EQ(mismatches, 0) << name << ": " << mismatches << " of " << cases << " differ";
    EXPECT_GT(cases, 0) << name;
    std::printf("%-20s %d cases, %d differ\n", name.c_str(), cases, mismatches);
  }
  EXPECT_GE(entries.size(), 4u);
}

}  // namespace
}  // namespace ft::tok
