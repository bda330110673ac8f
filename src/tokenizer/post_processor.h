// Post-processors of tokenizer.json that change ids: TemplateProcessing, Bert/Roberta; ByteLevel adds none.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "freetoken/status.h"

namespace ft::tok {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Adds the special tokens of a single sequence around `ids` (only called with add_special_tokens).
  virtual void process(std::vector<int32_t>& ids) const = 0;
};

// nullptr for JSON null; an unknown type is an error naming it.
Result<std::unique_ptr<PostProcessor>> make_post_processor(const nlohmann::json& spec);

}  // namespace ft::tok
