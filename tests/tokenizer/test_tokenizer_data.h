// Shared by the tokenizer tests: the unpacked fixture tokenizers and Hugging Face's reference file.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "tokenizer/tokenizer.h"

namespace ft::tok::testing {

// The four real upstream tokenizers covered by tokenizer_reference.json (made by HF tokenizers, Rust).
inline const std::vector<std::string>& reference_tokenizers() {
  static const std::vector<std::string> kNames = {"qwen3", "deepseek_v3", "llama3", "gptoss"};
  return kNames;
}

inline std::string tokenizer_dir(const std::string& name) { return std::string(FT_TOKENIZER_DATA) + "/" + name; }

inline const Tokenizer& load_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) {
    auto t = Tokenizer::load(tokenizer_dir(name));
    if (!t.ok()) {
      ADD_FAILURE() << t.status().to_string();
      std::abort();
    }
    slot = std::move(t).value();
  }
  return *slot;
}

inline const nlohmann::json& reference() {
  static const nlohmann::json kRef = [] {
    auto text = read_text_file(std::string(FT_TOKENIZER_DATA) + "/tokenizer_reference.json");
    if (!text.ok()) std::abort();
    return nlohmann::json::parse(text.value());
  }();
  return kRef;
}

}  // namespace ft::tok::testing
