// The BPE model of tokenizer.json: vocab, ranked merges, byte fallback, unk, and a word cache.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "freetoken/status.h"

namespace ft::tok {

// Transparent hashing so string_view lookups need no temporary string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // Builds from a tokenizer.json "model" object of type BPE.
  static Result<std::unique_ptr<BpeModel>> load(const nlohmann::json& spec);

  // Appends the ids of one pre-tokenized word to out.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  const std::string* id_to_token(int32_t id) const;  // nullptr for ids outside the vocab
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }

 private:
  BpeModel() = default;
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;
  // Initial symbols of a word: one per character (byte fallback / unk applied).
  void initial_symbols(std::string_view word, std::vector<int32_t>& ids) const;
  std::optional<int32_t> char_id(std::string_view ch) const;

  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  TokenMap vocab_;
  std::vector<std::string> id_to_token_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::vector<int32_t> small_char_id_;  // code points below kSmallChars -> id (-1 absent), fast path
  std::optional<int32_t> unk_id_;
  std::string continuing_subword_prefix_, end_of_word_suffix_;
  bool byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false;
  std::optional<int32_t> byte_ids_[256];  // "<0xXX>" tokens for byte fallback

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace ft::tok
