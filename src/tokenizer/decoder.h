// Decoders of tokenizer.json: ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "freetoken/status.h"

namespace ft::tok {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // tokenizers' decode_chain: token strings in, token strings out (joined by the caller).
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

// Builds the decoder of a tokenizer.json "decoder" object (nullptr for JSON null); an unknown type
// is an error naming it.
Result<std::unique_ptr<Decoder>> make_decoder(const nlohmann::json& spec);

}  // namespace ft::tok
