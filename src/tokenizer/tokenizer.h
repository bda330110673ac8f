// Tokenizer: loads a Hugging Face tokenizer.json (+ tokenizer_config.json); encode/decode match HF tokenizers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "freetoken/status.h"

namespace ft::tok {

class Normalizer;
class PreTokenizer;
class BpeModel;
class Decoder;
class PostProcessor;
class AddedTokenMatcher;

// What tokenizer_config.json says (all optional).
struct TokenizerConfig {
  std::optional<std::string> bos_token, eos_token, pad_token, unk_token;
  std::optional<int32_t> bos_id, eos_id, pad_id, unk_id;  // the ids of those strings
  bool add_bos_token = false;  // the config's flag; encode() follows tokenizer.json's post-processor
  bool add_eos_token = false;
  std::string chat_template;                          // the default template ("" when none)
  std::map<std::string, std::string> chat_templates;  // every named template ("default" included)
};

class Tokenizer {
 public:
  // `path`: a directory holding tokenizer.json (and optionally tokenizer_config.json), or the path of
  // a tokenizer.json file. Unknown components are errors naming them.
  static Result<std::unique_ptr<Tokenizer>> load(const std::string& path);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Ids of `text`; added/special token text in the input is matched as those tokens. With
  // add_special_tokens the post-processor's template (e.g. BOS) is applied. Thread-safe.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
  // Text of `ids` (unknown ids are skipped); invalid UTF-8 is replaced by U+FFFD as HF does.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::string id_to_token(int32_t id) const;  // "" for an unknown id
  int32_t vocab_size() const { return vocab_size_; }  // 1 + the largest id of the vocab and added tokens
  bool is_special(int32_t id) const;
  const TokenizerConfig& config() const { return config_; }

 private:
  Tokenizer();
  Status load_tokenizer_json(const std::string& path);
  Status load_config(const std::string& path);
  // Normalizes, pre-tokenizes and runs the model over one plain-text segment.
  void encode_text(std::string_view text, bool at_start, std::vector<int32_t>& out) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<AddedTokenMatcher> raw_added_;         // matched on the input text
  std::unique_ptr<AddedTokenMatcher> normalized_added_;  // matched after normalization
  std::unordered_map<int32_t, std::string> added_by_id_;
  std::unordered_map<std::string, int32_t> added_by_content_;
  std::unordered_set<int32_t> special_ids_;
  int32_t vocab_size_ = 0;
  TokenizerConfig config_;
};

}  // namespace ft::tok
