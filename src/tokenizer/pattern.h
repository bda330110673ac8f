// tokenizer.json pattern objects ({"String": s} or {"Regex": r}) compiled to a Regex.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "freetoken/status.h"
#include "tokenizer/regex.h"

namespace ft::tok {

// `where` names the component in the error message.
Result<std::shared_ptr<const Regex>> make_pattern(const nlohmann::json& pattern, const std::string& where);

}  // namespace ft::tok
