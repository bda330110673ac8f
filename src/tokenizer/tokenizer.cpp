// Tokenizer: the encode pipeline (added tokens, normalizer, pre-tokenizer, BPE, post-processor) and decode.
#include "tokenizer/tokenizer.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "tokenizer/added_vocab.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/utf8.h"

namespace ft::tok {

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) return not_found("tokenizer not found: " + path);
  const bool is_dir = fs::is_directory(path, ec);
  const std::string json_path = is_dir ? (fs::path(path) / "tokenizer.json").string() : path;
  if (!fs::exists(json_path, ec)) return not_found("tokenizer file not found: " + json_path);
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  FT_RETURN_IF_ERROR(t->load_tokenizer_json(json_path));
  const std::string config_path = (fs::path(json_path).parent_path() / "tokenizer_config.json").string();
  if (fs::exists(config_path, ec)) FT_RETURN_IF_ERROR(t->load_config(config_path));
  return t;
}

Status Tokenizer::load_tokenizer_json(const std::string& path) {
  FT_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    text.clear();
    auto in_file = [&](const Status& s) { return Status(s.code(), path + ": " + s.message()); };
    auto model = BpeModel::load(j.at("model"));
    if (!model.ok()) return in_file(model.status());
    model_ = std::move(model).value();
    auto normalizer = make_normalizer(j.value("normalizer", nlohmann::json()));
    if (!normalizer.ok()) return in_file(normalizer.status());
    normalizer_ = std::move(normalizer).value();
    auto pre = make_pre_tokenizer(j.value("pre_tokenizer", nlohmann::json()));
    if (!pre.ok()) return in_file(pre.status());
    pre_tokenizer_ = std::move(pre).value();
    auto decoder = make_decoder(j.value("decoder", nlohmann::json()));
    if (!decoder.ok()) return in_file(decoder.status());
    decoder_ = std::move(decoder).value();
    auto post = make_post_processor(j.value("post_processor", nlohmann::json()));
    if (!post.ok()) return in_file(post.status());
    post_processor_ = std::move(post).value();

    // Specials first, then the others, as tokenizers orders its matching patterns.
    std::vector<AddedToken> raw, normalized;
    std::vector<std::string> raw_patterns, normalized_patterns;
    vocab_size_ = model_->max_id() + 1;
    for (int pass = 0; pass < 2; ++pass) {
      for (const auto& a : j.value("added_tokens", nlohmann::json::array())) {
        AddedToken tok{a.at("id").get<int32_t>(), a.at("content").get<std::string>(), a.value("special", false),
                       a.value("lstrip", false),  a.value("rstrip", false),               a.value("single_word", false),
                       a.value("normalized", false)};
        if (tok.special != (pass == 0) || tok.content.empty()) continue;
        added_by_id_[tok.id] = tok.content;
        added_by_content_.emplace(tok.content, tok.id);
        if (tok.special) special_ids_.insert(tok.id);
        vocab_size_ = std::max(vocab_size_, tok.id + 1);
        if (tok.normalized) {
          std::string pattern = tok.content;
          if (normalizer_) normalizer_->normalize(pattern);
          added_by_id_[tok.id] = pattern;  // tokenizers stores (and decodes) the normalized content
          normalized_patterns.push_back(std::move(pattern));
          normalized.push_back(std::move(tok));
        } else {
          raw_patterns.push_back(tok.content);
          raw.push_back(std::move(tok));
        }
      }
    }
    raw_added_ = std::make_unique<AddedTokenMatcher>(std::move(raw), raw_patterns);
    normalized_added_ = std::make_unique<AddedTokenMatcher>(std::move(normalized), normalized_patterns);
  } catch (const nlohmann::json::exception& e) {
    return corrupt_file(path + ": " + e.what());
  }
  return ok_status();
}

Status Tokenizer::load_config(const std::string& path) {
  FT_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    // A special token is a string or an AddedToken object {"content": ...}.
    auto token = [&](const char* key, std::optional<std::string>& str, std::optional<int32_t>& id) {
      const auto it = j.find(key);
      if (it == j.end() || it->is_null()) return;
      str = it->is_object() ? it->at("content").get<std::string>() : it->get<std::string>();
      id = token_to_id(*str);
    };
    token("bos_token", config_.bos_token, config_.bos_id);
    token("eos_token", config_.eos_token, config_.eos_id);
    token("pad_token", config_.pad_token, config_.pad_id);
    token("unk_token", config_.unk_token, config_.unk_id);
    config_.add_bos_token = j.value("add_bos_token", false);
    config_.add_eos_token = j.value("add_eos_token", false);
    const auto ct = j.find("chat_template");
    if (ct != j.end() && ct->is_string()) {
      config_.chat_template = ct->get<std::string>();
      config_.chat_templates["default"] = config_.chat_template;
    } else if (ct != j.end() && ct->is_array()) {
      for (const auto& entry : *ct)
        config_.chat_templates[entry.at("name").get<std::string>()] = entry.at("template").get<std::string>();
      const auto d = config_.chat_templates.find("default");
      if (d != config_.chat_templates.end()) config_.chat_template = d->second;
    }
  } catch (const nlohmann::json::exception& e) {
    return corrupt_file(path + ": " + e.what());
  }
  return ok_status();
}

void Tokenizer::encode_text(std::string_view text, bool at_start, std::vector<int32_t>& out) const {
  thread_local std::vector<Piece> pieces;
  pieces.clear();
  pieces.push_back({std::string(text), at_start});
  if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pieces);
  for (const Piece& p : pieces) model_->tokenize(p.text, out);
}

std::vector<int32_t> Tokenizer::encode(std::string_view input, bool add_special_tokens) const {
  std::string repaired;
  if (!utf8_is_valid(input)) {
    repaired = utf8_lossy(input);
    input = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(input.size() / 3 + 4);
  std::vector<Segment> raw, normalized;
  raw_added_->split(input, raw);
  std::string text;
  for (const Segment& seg : raw) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    text.assign(input.substr(seg.begin, seg.end - seg.begin));
    if (normalizer_) normalizer_->normalize(text);
    normalized.clear();
    normalized_added_->split(text, normalized);
    for (const Segment& sub : normalized) {
      if (sub.id >= 0) {
        ids.push_back(sub.id);
      } else {
        encode_text(std::string_view(text).substr(sub.begin, sub.end - sub.begin), seg.begin == 0 && sub.begin == 0,
                    ids);
      }
    }
  }
  if (add_special_tokens && post_processor_) post_processor_->process(ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (skip_special_tokens && special_ids_.count(id)) continue;
    const auto added = added_by_id_.find(id);
    if (added != added_by_id_.end()) {
      tokens.push_back(added->second);
    } else if (const std::string* t = model_->id_to_token(id)) {
      tokens.push_back(*t);
    }
  }
  if (!decoder_) {  // tokenizers joins the raw tokens with spaces
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  decoder_->decode_chain(tokens);
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  const auto it = added_by_content_.find(std::string(token));
  if (it != added_by_content_.end()) return it->second;
  return model_->token_to_id(token);
}

std::string Tokenizer::id_to_token(int32_t id) const {
  const auto it = added_by_id_.find(id);
  if (it != added_by_id_.end()) return it->second;
  const std::string* t = model_->id_to_token(id);
  return t ? *t : std::string();
}

bool Tokenizer::is_special(int32_t id) const { return special_ids_.count(id) != 0; }

}  // namespace ft::tok
