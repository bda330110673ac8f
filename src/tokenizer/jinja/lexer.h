// Jinja lexer: template text -> tokens, with Jinja2's newline normalisation and whitespace control
// (trim_blocks, lstrip_blocks, '-' and '+' markers) applied the way transformers configures it.
#pragma once

#include <string>
#include <vector>

#include "freetoken/status.h"

namespace ft::tok::jinja {

enum class TokenType {
  kText,        // literal output
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,      // value already unescaped
  kInteger,
  kFloat,
  kOperator,    // + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } , . : |
  kEnd,
};

struct Token {
  TokenType type;
  std::string text;
  int line;
};

Result<std::vector<Token>> tokenize(const std::string& source);

}  // namespace ft::tok::jinja
