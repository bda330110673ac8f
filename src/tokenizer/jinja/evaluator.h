// Jinja evaluator: renders a statement tree against a context with Jinja2's scoping (loops, macros and
// call blocks open scopes; `if` does not) and default-Undefined semantics.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "freetoken/status.h"
#include "tokenizer/jinja/ast.h"

namespace ft::tok::jinja {

struct Scope {
  std::shared_ptr<Scope> parent;
  std::unordered_map<std::string, Value> vars;
  const Value* find(const std::string& name) const;
};
using ScopePtr = std::shared_ptr<Scope>;

class Evaluator {
 public:
  // `context` holds the template variables (a dict); globals (range, namespace, ...) sit below it.
  explicit Evaluator(const Value& context);
  Status render(const Body& body, std::string& out);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  // Statements (eval_stmt.cpp).
  Status exec(const Body& body, const ScopePtr& scope, std::string& out);
  Status exec_stmt(const Stmt& s, const ScopePtr& scope, std::string& out);
  Status exec_for(const Stmt& s, const ScopePtr& scope, std::string& out);
  Status assign(const Target& target, Value value, const ScopePtr& scope, int line);
  Value make_macro(const Stmt& s, const ScopePtr& scope);
  Result<Value> call_macro(const Stmt& s, const ScopePtr& def_scope, const CallArgs& args);
  Result<Value> eval_call_block(const Stmt& s, const ScopePtr& scope);

  // Expressions (eval_expr.cpp).
  Result<Value> eval(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_binary(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_compare(const Expr& e, const ScopePtr& scope);
  Status eval_args(const Expr& e, size_t first, const ScopePtr& scope, CallArgs& args);
  Result<Value> call(const Value& fn, const CallArgs& args, const Expr& e);

  static Status at_line(int line, const Status& s);

  ScopePtr root_;
  Flow flow_ = Flow::kNormal;
  int depth_ = 0;  // macro recursion depth
};

}  // namespace ft::tok::jinja
