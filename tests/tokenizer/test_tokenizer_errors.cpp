// Loading errors: missing files and unknown components give one-line errors naming them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace ft::tok {
namespace {

namespace fs = std::filesystem;

// A minimal valid byte-level tokenizer.json with one component replaced by `patch`.
std::string write_tokenizer(const std::string& name, const nlohmann::json& patch) {
  nlohmann::json j = {
      {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}}, {"merges", {"a b"}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", nullptr},
      {"decoder", nullptr},
      {"post_processor", nullptr},
      {"added_tokens", nlohmann::json::array()},
  };
  j.merge_patch(patch);
  const fs::path dir = fs::temp_directory_path() / ("ft_tok_errors_" + name);
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << j.dump();
  return dir.string();
}

void expect_error_naming(const nlohmann::json& patch, const std::string& name, const std::string& needle) {
  auto t = Tokenizer::load(write_tokenizer(name, patch));
  ASSERT_FALSE(t.ok()) << name;
  const std::string msg = t.status().message();
  EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(TokenizerErrors, MinimalTokenizerLoads) {
  // Invariant: with every optional component null, plain BPE applies the single merge.
  auto t = Tokenizer::load(write_tokenizer("minimal", nlohmann::json::object()));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t.value()->encode("abba", false), (std::vector<int32_t>{2, 1, 0}));
}

TEST(TokenizerErrors, MissingFileIsNamed) {
  auto t = Tokenizer::load("/nonexistent/ft_tokenizer_dir");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find("/nonexistent/ft_tokenizer_dir"), std::string::npos);
  const fs::path empty = fs::temp_directory_path() / "ft_tok_errors_empty";
  fs::create_directories(empty);
  auto u = Tokenizer::load(empty.string());
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.status().message().find((empty / "tokenizer.json").string()), std::string::npos);
}

TEST(TokenizerErrors, UnknownComponentsAreNamed) {
  expect_error_naming({{"normalizer", {{"type", "Precompiled"}}}}, "normalizer", "normalizer type 'Precompiled'");
  expect_error_naming({{"normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "BertNormalizer"}}}}}}},
                      "nested", "normalizer type 'BertNormalizer'");
  expect_error_naming({{"pre_tokenizer", {{"type", "UnicodeScripts"}}}}, "pre", "pre-tokenizer type 'UnicodeScripts'");
  expect_error_naming({{"decoder", {{"type", "WordPiece"}}}}, "decoder", "decoder type 'WordPiece'");
  expect_error_naming({{"post_processor", {{"type", "Mystery"}}}}, "post", "post-processor type 'Mystery'");
  expect_error_naming({{"model", {{"type", "Unigram"}}}}, "model", "model type 'Unigram'");
  expect_error_naming({{"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "("}}}, {"behavior", "Isolated"}}}},
                      "regex", "does not compile");
  expect_error_naming({{"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"String", "x"}}}, {"behavior", "Sideways"}}}},
                      "behavior", "split behavior 'Sideways'");
}

TEST(TokenizerErrors, BrokenJsonAndMergesAreReported) {
  expect_error_naming({{"model", {{"merges", {"a c"}}}}}, "merge", "merge 'a c'");
  const fs::path dir = fs::temp_directory_path() / "ft_tok_errors_json";
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << "{\"model\": ";
  auto t = Tokenizer::load(dir.string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("tokenizer.json"), std::string::npos);
}

}  // namespace
}  // namespace ft::tok
