// Jinja expression grammar (jinja2.parser precedence): condexpr, or, and, not, compare, + -, ~, * / // %, **,
// unary, primary with postfix (attribute, subscript, call), filters and tests.
#include <cstdlib>

#include "tokenizer/jinja/parser_state.h"

namespace ft::tok::jinja {
namespace {

std::shared_ptr<Expr> make(Expr::Type type, int line) {
  auto e = std::make_shared<Expr>();
  e->type = type;
  e->line = line;
  return e;
}

ExprPtr binary(const std::string& op, ExprPtr a, ExprPtr b, int line) {
  auto e = make(Expr::Type::kBinary, line);
  e->name = op;
  e->args = {std::move(a), std::move(b)};
  return e;
}

}  // namespace

Status ParserState::expect_op(const char* op) {
  if (skip_op(op)) return ok_status();
  return error(std::string("expected '") + op + "', got '" + cur().text + "'");
}

Result<std::string> ParserState::expect_name() {
  if (cur().type != TokenType::kName) return error("expected a name, got '" + cur().text + "'");
  std::string n = cur().text;
  advance();
  return n;
}

Result<ExprPtr> ParserState::parse_expression(bool with_condexpr) {
  FT_ASSIGN_OR_RETURN(ExprPtr expr, parse_or());
  if (!with_condexpr) return expr;
  while (is_name("if")) {
    int line = cur().line;
    advance();
    auto cond = make(Expr::Type::kCondition, line);
    FT_ASSIGN_OR_RETURN(ExprPtr test, parse_or());
    ExprPtr otherwise;
    if (skip_name("else")) {
      FT_ASSIGN_OR_RETURN(otherwise, parse_expression(true));
    }
    cond->args = {test, expr, otherwise};
    expr = cond;
  }
  return expr;
}

Result<ExprPtr> ParserState::parse_tuple(bool with_condexpr) {
  int line = cur().line;
  FT_ASSIGN_OR_RETURN(ExprPtr first, parse_expression(with_condexpr));
  if (!is_op(",")) return first;
  auto tuple = make(Expr::Type::kTuple, line);
  tuple->args.push_back(first);
  while (skip_op(",")) {
    if (cur().type == TokenType::kBlockEnd || cur().type == TokenType::kVarEnd || is_op(")") || is_op("=")) break;
    FT_ASSIGN_OR_RETURN(ExprPtr next, parse_expression(with_condexpr));
    tuple->args.push_back(next);
  }
  return ExprPtr(tuple);
}

Result<ExprPtr> ParserState::parse_or() {
  FT_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
  while (is_name("or")) {
    int line = cur().line;
    advance();
    FT_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
    left = binary("or", left, right, line);
  }
  return left;
}

Result<ExprPtr> ParserState::parse_and() {
  FT_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
  while (is_name("and")) {
    int line = cur().line;
    advance();
    FT_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
    left = binary("and", left, right, line);
  }
  return left;
}

Result<ExprPtr> ParserState::parse_not() {
  if (is_name("not")) {
    auto e = make(Expr::Type::kUnary, cur().line);
    advance();
    e->name = "not";
    FT_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
    e->args = {operand};
    return ExprPtr(e);
  }
  return parse_compare();
}

Result<ExprPtr> ParserState::parse_compare() {
  int line = cur().line;
  FT_ASSIGN_OR_RETURN(ExprPtr first, parse_math1());
  std::shared_ptr<Expr> cmp;
  while (true) {
    std::string op;
    if (cur().type == TokenType::kOperator &&
        (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" || cur().text == "<=" ||
         cur().text == ">=")) {
      op = cur().text;
      advance();
    } else if (is_name("in")) {
      op = "in";
      advance();
    } else if (is_name("not") && peek().type == TokenType::kName && peek().text == "in") {
      op = "not in";
      advance();
      advance();
    } else {
      break;
    }
    if (!cmp) {
      cmp = make(Expr::Type::kCompare, line);
      cmp->args.push_back(first);
    }
    FT_ASSIGN_OR_RETURN(ExprPtr operand, parse_math1());
    cmp->ops.push_back(op);
    cmp->args.push_back(operand);
  }
  return cmp ? ExprPtr(cmp) : first;
}

Result<ExprPtr> ParserState::parse_math1() {
  FT_ASSIGN_OR_RETURN(ExprPtr left, parse_concat());
  while (is_op("+") || is_op("-")) {
    std::string op = cur().text;
    int line = cur().line;
    advance();
    FT_ASSIGN_OR_RETURN(ExprPtr right, parse_concat());
    left = binary(op, left, right, line);
  }
  return left;
}

Result<ExprPtr> ParserState::parse_concat() {
  FT_ASSIGN_OR_RETURN(ExprPtr left, parse_math2());
  while (is_op("~")) {
    int line = cur().line;
    advance();
    FT_ASSIGN_OR_RETURN(ExprPtr right, parse_math2());
    left = binary("~", left, right, line);
  }
  return left;
}

Result<ExprPtr> ParserState::parse_math2() {
  FT_ASSIGN_OR_RETURN(ExprPtr left, parse_pow());
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    std::string op = cur().text;
    int line = cur().line;
    advance();
    FT_ASSIGN_OR_RETURN(ExprPtr right, parse_pow());
    left = binary(op, left, right, line);
  }
  return left;
}

Result<ExprPtr> ParserState::parse_pow() {
  FT_ASSIGN_OR_RETURN(ExprPtr left, parse_unary(true));
  while (is_op("**")) {
    int line = cur().line;
    advance();
    FT_ASSIGN_OR_RETURN(ExprPtr right, parse_unary(true));
    left = binary("**", left, right, line);
  }
  return left;
}

Result<ExprPtr> ParserState::parse_unary(bool with_filter) {
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    auto e = make(Expr::Type::kUnary, cur().line);
    e->name = cur().text;
    advance();
    FT_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
    e->args = {operand};
    node = e;
  } else {
    FT_ASSIGN_OR_RETURN(node, parse_primary());
  }
  FT_ASSIGN_OR_RETURN(node, parse_postfix(node));
  if (with_filter) return parse_filter_expr(node);
  return node;
}

Result<ExprPtr> ParserState::parse_primary() {
  const Token& t = cur();
  auto lit = make(Expr::Type::kLiteral, t.line);
  switch (t.type) {
    case TokenType::kName: {
      if (t.text == "true" || t.text == "True") lit->literal = Value::from_bool(true);
      else if (t.text == "false" || t.text == "False") lit->literal = Value::from_bool(false);
      else if (t.text == "none" || t.text == "None") lit->literal = Value::none();
      else {
        auto name = make(Expr::Type::kName, t.line);
        name->name = t.text;
        advance();
        return ExprPtr(name);
      }
      advance();
      return ExprPtr(lit);
    }
    case TokenType::kString: {
      std::string s;
      while (cur().type == TokenType::kString) {
        s += cur().text;
        advance();
      }
      lit->literal = Value::from_string(std::move(s));
      return ExprPtr(lit);
    }
    case TokenType::kInteger:
      lit->literal = Value::from_int(std::strtoll(t.text.c_str(), nullptr, 10));
      advance();
      return ExprPtr(lit);
    case TokenType::kFloat:
      lit->literal = Value::from_float(std::strtod(t.text.c_str(), nullptr));
      advance();
      return ExprPtr(lit);
    default: break;
  }
  if (skip_op("(")) {
    if (skip_op(")")) return ExprPtr(make(Expr::Type::kTuple, t.line));
    FT_ASSIGN_OR_RETURN(ExprPtr inner, parse_tuple(true));
    FT_RETURN_IF_ERROR(expect_op(")"));
    return inner;
  }
  if (skip_op("[")) {
    auto list = make(Expr::Type::kList, t.line);
    while (!is_op("]")) {
      if (!list->args.empty()) FT_RETURN_IF_ERROR(expect_op(","));
      if (is_op("]")) break;
      FT_ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
      list->args.push_back(item);
    }
    advance();
    return ExprPtr(list);
  }
  if (skip_op("{")) {
    auto dict = make(Expr::Type::kDict, t.line);
    while (!is_op("}")) {
      if (!dict->args.empty()) FT_RETURN_IF_ERROR(expect_op(","));
      if (is_op("}")) break;
      FT_ASSIGN_OR_RETURN(ExprPtr key, parse_expression());
      FT_RETURN_IF_ERROR(expect_op(":"));
      FT_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      dict->args.push_back(key);
      dict->args.push_back(value);
    }
    advance();
    return ExprPtr(dict);
  }
  return error("unexpected '" + t.text + "'");
}

Result<ExprPtr> ParserState::parse_postfix(ExprPtr node) {
  while (true) {
    int line = cur().line;
    if (skip_op(".")) {
      if (cur().type == TokenType::kInteger) {
        auto item = make(Expr::Type::kItem, line);
        auto index = make(Expr::Type::kLiteral, line);
        index->literal = Value::from_int(std::strtoll(cur().text.c_str(), nullptr, 10));
        advance();
        item->args = {node, index};
        node = item;
        continue;
      }
      auto attr = make(Expr::Type::kAttr, line);
      FT_ASSIGN_OR_RETURN(attr->name, expect_name());
      attr->args = {node};
      node = attr;
    } else if (is_op("[")) {
      FT_ASSIGN_OR_RETURN(node, parse_subscript(node));
    } else if (is_op("(")) {
      auto call = make(Expr::Type::kCall, line);
      call->args.push_back(node);
      FT_RETURN_IF_ERROR(parse_call_args(*call));
      node = call;
    } else {
      return node;
    }
  }
}

Result<ExprPtr> ParserState::parse_subscript(ExprPtr node) {
  int line = cur().line;
  advance();  // [
  ExprPtr parts[3];
  int n_colons = 0;
  while (!is_op("]")) {
    if (skip_op(":")) {
      if (++n_colons > 2) return error("too many ':' in subscript");
      continue;
    }
    if (parts[n_colons]) return error("malformed subscript");
    FT_ASSIGN_OR_RETURN(parts[n_colons], parse_expression());
  }
  advance();
  if (n_colons == 0) {
    if (!parts[0]) return error("empty subscript");
    auto item = make(Expr::Type::kItem, line);
    item->args = {node, parts[0]};
    return ExprPtr(item);
  }
  auto slice = make(Expr::Type::kSlice, line);
  slice->args = {node, parts[0], parts[1], parts[2]};
  return ExprPtr(slice);
}

Status ParserState::parse_call_args(Expr& call) {
  FT_RETURN_IF_ERROR(expect_op("("));
  bool first = true;
  while (!is_op(")")) {
    if (!first) FT_RETURN_IF_ERROR(expect_op(","));
    first = false;
    if (is_op(")")) break;
    if (is_op("*") || is_op("**")) return error("*args and **kwargs in calls are not supported");
    if (cur().type == TokenType::kName && peek().type == TokenType::kOperator && peek().text == "=") {
      std::string key = cur().text;
      advance();
      advance();
      FT_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      call.kwargs.emplace_back(key, value);
    } else {
      if (!call.kwargs.empty()) return error("positional argument after keyword argument");
      FT_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      call.args.push_back(value);
    }
  }
  advance();
  return ok_status();
}

Result<ExprPtr> ParserState::parse_filters(ExprPtr node) {
  while (is_op("|")) {
    auto filter = make(Expr::Type::kFilter, cur().line);
    advance();
    FT_ASSIGN_OR_RETURN(filter->name, expect_name());
    while (skip_op(".")) {
      FT_ASSIGN_OR_RETURN(std::string part, expect_name());
      filter->name += "." + part;
    }
    filter->args.push_back(node);
    if (is_op("(")) FT_RETURN_IF_ERROR(parse_call_args(*filter));
    node = filter;
  }
  return node;
}

Result<ExprPtr> ParserState::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      FT_ASSIGN_OR_RETURN(node, parse_filters(node));
    } else if (is_name("is")) {
      auto test = make(Expr::Type::kTest, cur().line);
      advance();
      test->negated = skip_name("not");
      FT_ASSIGN_OR_RETURN(test->name, expect_name());
      while (skip_op(".")) {
        FT_ASSIGN_OR_RETURN(std::string part, expect_name());
        test->name += "." + part;
      }
      test->args.push_back(node);
      if (is_op("(")) {
        FT_RETURN_IF_ERROR(parse_call_args(*test));
      } else if ((cur().type == TokenType::kName || cur().type == TokenType::kString ||
                  cur().type == TokenType::kInteger || cur().type == TokenType::kFloat || is_op("(") || is_op("[") ||
                  is_op("{")) &&
                 !is_name("else") && !is_name("or") && !is_name("and")) {
        if (is_name("is")) return error("You cannot chain multiple tests with is");
        FT_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
        FT_ASSIGN_OR_RETURN(arg, parse_postfix(arg));
        test->args.push_back(arg);
      }
      node = test;
    } else if (is_op("(")) {
      auto call = make(Expr::Type::kCall, cur().line);
      call->args.push_back(node);
      FT_RETURN_IF_ERROR(parse_call_args(*call));
      node = call;
    } else {
      return node;
    }
  }
}

Result<Target> ParserState::parse_target() {
  Target target;
  bool parens = skip_op("(");
  FT_ASSIGN_OR_RETURN(std::string first, expect_name());
  target.names.push_back(first);
  if (!parens && skip_op(".")) {
    FT_ASSIGN_OR_RETURN(target.attr, expect_name());
    return target;
  }
  while (skip_op(",")) {
    if (cur().type != TokenType::kName) break;
    FT_ASSIGN_OR_RETURN(std::string next, expect_name());
    target.names.push_back(next);
  }
  if (parens) FT_RETURN_IF_ERROR(expect_op(")"));
  return target;
}

}  // namespace ft::tok::jinja
