// The parser's token cursor and its expression grammar, shared by parser.cpp (statements) and
// parser_expr.cpp (expressions).
#pragma once

#include <string>
#include <vector>

#include "freetoken/status.h"
#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"

namespace ft::tok::jinja {

class ParserState {
 public:
  explicit ParserState(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek(size_t n = 1) const { return tokens_[std::min(pos_ + n, tokens_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool is_op(const char* op) const { return cur().type == TokenType::kOperator && cur().text == op; }
  bool is_name(const char* name) const { return cur().type == TokenType::kName && cur().text == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    advance();
    return true;
  }
  Status error(const std::string& msg) const {
    return invalid_argument("template line " + std::to_string(cur().line) + ": " + msg);
  }
  Status expect_op(const char* op);
  Result<std::string> expect_name();

  // Expressions (parser_expr.cpp).
  Result<ExprPtr> parse_expression(bool with_condexpr = true);
  // A comma-separated list becomes a tuple; `explicit_parens` when inside ( ).
  Result<ExprPtr> parse_tuple(bool with_condexpr = true);
  Result<ExprPtr> parse_filters(ExprPtr node);  // a chain of `| name(args)`
  Result<Target> parse_target();               // a, b  or  ns.attr
  Status parse_call_args(Expr& call);          // ( args, key=value ) appended to call.args / kwargs

 private:
  Result<ExprPtr> parse_or();
  Result<ExprPtr> parse_and();
  Result<ExprPtr> parse_not();
  Result<ExprPtr> parse_compare();
  Result<ExprPtr> parse_math1();
  Result<ExprPtr> parse_concat();
  Result<ExprPtr> parse_math2();
  Result<ExprPtr> parse_pow();
  Result<ExprPtr> parse_unary(bool with_filter);
  Result<ExprPtr> parse_primary();
  Result<ExprPtr> parse_postfix(ExprPtr node);
  Result<ExprPtr> parse_filter_expr(ExprPtr node);
  Result<ExprPtr> parse_subscript(ExprPtr node);

  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

}  // namespace ft::tok::jinja
