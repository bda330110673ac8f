// Jinja syntax tree: expressions and statements, each with its template line for error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace ft::tok::jinja {

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expr {
  enum class Type {
    kLiteral,   // literal
    kName,      // name
    kList,      // [args...]
    kTuple,     // (args...)
    kDict,      // {kwargs keys as expressions: args = k0, v0, k1, v1, ...}
    kAttr,      // args[0] . name
    kItem,      // args[0] [ args[1] ]
    kSlice,     // args[0] [ args[1] : args[2] : args[3] ] (null parts are absent)
    kCall,      // args[0] ( args[1..] , kwargs )
    kFilter,    // args[0] | name ( args[1..] , kwargs )
    kTest,      // args[0] is [not] name ( args[1..] )
    kUnary,     // name in {"-", "+", "not"} applied to args[0]
    kBinary,    // args[0] name args[1], name in {+ - * / // % ** ~ and or}
    kCompare,   // args[0] ops[0] args[1] ops[1] args[2] ...
    kCondition  // args[1] if args[0] else args[2] (args[2] may be null)
  };
  Type type;
  int line = 0;
  Value literal;
  std::string name;
  bool negated = false;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

struct Stmt;
using Body = std::vector<std::shared_ptr<const Stmt>>;

// An assignment target: names (tuple unpacking when several), or `ns.attr`.
struct Target {
  std::vector<std::string> names;
  std::string attr;  // set when the target is names[0].attr
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct Stmt {
  enum class Type {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // branches (cond, body); a null cond is the else branch
    kFor,       // for target in expr [if cond]: body [else: else_body]
    kSet,       // set target = expr
    kSetBlock,  // set target [| filters applied to the captured body via expr]
    kMacro,     // macro name(params): body
    kCallBlock, // call(params) expr: body  (body becomes `caller`)
    kFilterBlock,  // filter: body rendered, then expr applied (expr's innermost arg is a placeholder)
    kBreak,
    kContinue,
    kScope,     // a body rendered as is: {% generation %}, {% with %}
  };
  Type type;
  int line = 0;
  std::string text;
  ExprPtr expr, cond;
  Target target;
  Body body, else_body;
  std::vector<std::pair<ExprPtr, Body>> branches;
  std::string name;
  std::vector<MacroParam> params;
  std::vector<std::pair<Target, ExprPtr>> assignments;  // {% with a = 1 %}
};

}  // namespace ft::tok::jinja
