// Pre-tokenizers of tokenizer.json: Split, ByteLevel, Metaspace, Digits, Whitespace(Split), Sequence.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "freetoken/status.h"

namespace ft::tok {

// One piece of text on its way to the model.
struct Piece {
  std::string text;
  bool at_start = false;  // begins at offset 0 of the original input (Metaspace prepend_scheme "first")
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits and rewrites pieces in place; empty pieces are dropped.
  virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
};

// Builds the pre-tokenizer of a tokenizer.json "pre_tokenizer" object (nullptr for JSON null);
// an unknown type is an error naming it.
Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const nlohmann::json& spec);

}  // namespace ft::tok
