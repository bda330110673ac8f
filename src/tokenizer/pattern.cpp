// tokenizer.json pattern objects compiled to a Regex (a String pattern is matched literally).
#include "tokenizer/pattern.h"

#include <nlohmann/json.hpp>

namespace ft::tok {

Result<std::shared_ptr<const Regex>> make_pattern(const nlohmann::json& pattern, const std::string& where) {
  if (pattern.is_object() && pattern.contains("String")) {
    const std::string literal = pattern["String"].get<std::string>();
    return literal.empty() ? Regex::compile("(?!)") : Regex::literal(literal);  // "" never splits
  }
  if (pattern.is_object() && pattern.contains("Regex")) return Regex::compile(pattern["Regex"].get<std::string>());
  return invalid_argument(where + ": pattern must be {\"String\": ...} or {\"Regex\": ...}");
}

}  // namespace ft::tok
