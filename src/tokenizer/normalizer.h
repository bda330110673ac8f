// Normalizers of tokenizer.json: NFC/NFD/NFKC/NFKD, Lowercase, Strip, Replace, Prepend, Sequence.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "freetoken/status.h"

namespace ft::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites s (valid UTF-8) in place.
  virtual void normalize(std::string& s) const = 0;
};

// Builds the normalizer described by a tokenizer.json "normalizer" object; an unknown type is an
// error naming it. A JSON null gives nullptr (no normalization).
Result<std::unique_ptr<Normalizer>> make_normalizer(const nlohmann::json& spec);

}  // namespace ft::tok
