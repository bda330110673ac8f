// Jinja parser: tokens -> statement tree, following jinja2.parser's grammar and operator precedence.
#pragma once

#include <string>

#include "freetoken/status.h"
#include "tokenizer/jinja/ast.h"

namespace ft::tok::jinja {

// Parses a whole template; an unknown or unsupported construct is an error naming its line.
Result<Body> parse_template(const std::string& source);

}  // namespace ft::tok::jinja
