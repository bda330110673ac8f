// Jinja expression evaluation with Python operator semantics (int/float arithmetic, str/list concatenation,
// floor division and modulo, chained comparisons, short-circuit and/or returning operands).
#include <cmath>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/evaluator.h"

namespace ft::tok::jinja {
namespace {

Status type_error(const char* op, const Value& a, const Value& b) {
  return invalid_argument(std::string("unsupported operand type(s) for ") + op + ": '" + kind_name(a) + "' and '" +
                          kind_name(b) + "'");
}

Result<Value> repeat(const Value& seq, int64_t n) {
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.str;
    return Value::from_string(out);
  }
  List out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.list->begin(), seq.list->end());
  return Value::from_list(std::move(out));
}

Result<Value> arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value::from_string(a.str + b.str);
    if (a.is_list() && b.is_list()) {
      List out = *a.list;
      out.insert(out.end(), b.list->begin(), b.list->end());
      return Value::from_list(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && b.is_integral()) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && a.is_integral()) return repeat(b, a.as_int());
  }
  if (!a.is_number() || !b.is_number()) {
    if (op == "%" && a.is_string()) return unsupported("printf-style string formatting ('%') is not supported");
    return type_error(op.c_str(), a, b);
  }
  bool ints = a.is_integral() && b.is_integral();
  int64_t x = a.as_int(), y = b.as_int();
  double fx = a.as_double(), fy = b.as_double();
  if (op == "+") return ints ? Value::from_int(x + y) : Value::from_float(fx + fy);
  if (op == "-") return ints ? Value::from_int(x - y) : Value::from_float(fx - fy);
  if (op == "*") return ints ? Value::from_int(x * y) : Value::from_float(fx * fy);
  if (op == "/") {
    if (fy == 0) return invalid_argument("division by zero");
    return Value::from_float(fx / fy);
  }
  if (op == "//" || op == "%") {
    if (fy == 0) return invalid_argument("integer division or modulo by zero");
    if (ints) {
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        --q;
        r += y;
      }
      return Value::from_int(op == "//" ? q : r);
    }
    double q = std::floor(fx / fy);
    return Value::from_float(op == "//" ? q : fx - q * fy);
  }
  if (op == "**") {
    if (ints && y >= 0) {
      int64_t r = 1;
      for (int64_t i = 0; i < y; ++i) r *= x;
      return Value::from_int(r);
    }
    return Value::from_float(std::pow(fx, fy));
  }
  return internal_error("unknown operator " + op);
}

}  // namespace

Status Evaluator::at_line(int line, const Status& s) {
  if (s.message().rfind("template line ", 0) == 0) return s;
  return {s.code(), "template line " + std::to_string(line) + ": " + s.message()};
}

Status Evaluator::eval_args(const Expr& e, size_t first, const ScopePtr& scope, CallArgs& args) {
  for (size_t i = first; i < e.args.size(); ++i) {
    FT_ASSIGN_OR_RETURN(Value v, eval(*e.args[i], scope));
    args.positional.push_back(std::move(v));
  }
  for (const auto& [k, x] : e.kwargs) {
    FT_ASSIGN_OR_RETURN(Value v, eval(*x, scope));
    args.keyword.emplace_back(k, std::move(v));
  }
  return ok_status();
}

Result<Value> Evaluator::call(const Value& fn, const CallArgs& args, const Expr& e) {
  if (fn.is_undefined()) return at_line(e.line, undefined_error(fn));
  if (fn.kind != Kind::kFunction)
    return at_line(e.line, invalid_argument(std::string("'") + kind_name(fn) + "' object is not callable"));
  auto r = (*fn.fn)(args);
  if (!r.ok()) return at_line(e.line, r.status());
  return r;
}

Result<Value> Evaluator::eval(const Expr& e, const ScopePtr& scope) {
  using T = Expr::Type;
  switch (e.type) {
    case T::kLiteral: return e.literal;
    case T::kName: {
      const Value* v = scope->find(e.name);
      return v ? *v : Value::undefined("'" + e.name + "' is undefined");
    }
    case T::kList:
    case T::kTuple: {
      List items;
      for (const auto& x : e.args) {
        FT_ASSIGN_OR_RETURN(Value v, eval(*x, scope));
        items.push_back(std::move(v));
      }
      return e.type == T::kTuple ? Value::from_tuple(std::move(items)) : Value::from_list(std::move(items));
    }
    case T::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        FT_ASSIGN_OR_RETURN(Value k, eval(*e.args[i], scope));
        if (!k.is_string()) return at_line(e.line, unsupported("dict literal keys must be strings"));
        FT_ASSIGN_OR_RETURN(Value v, eval(*e.args[i + 1], scope));
        d.set(k.str, std::move(v));
      }
      return Value::from_dict(std::move(d));
    }
    case T::kAttr: {
      FT_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0], scope));
      auto r = get_attribute(obj, e.name);
      if (!r.ok()) return at_line(e.line, r.status());
      return r;
    }
    case T::kItem: {
      FT_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0], scope));
      FT_ASSIGN_OR_RETURN(Value key, eval(*e.args[1], scope));
      auto r = get_item(obj, key);
      if (!r.ok()) return at_line(e.line, r.status());
      return r;
    }
    case T::kSlice: {
      FT_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0], scope));
      Value parts[3];
      for (int i = 0; i < 3; ++i)
        if (e.args[1 + i]) {
          FT_ASSIGN_OR_RETURN(parts[i], eval(*e.args[1 + i], scope));
        }
      auto r = get_slice(obj, parts[0], parts[1], parts[2]);
      if (!r.ok()) return at_line(e.line, r.status());
      return r;
    }
    case T::kCall: {
      FT_ASSIGN_OR_RETURN(Value fn, eval(*e.args[0], scope));
      CallArgs args;
      FT_RETURN_IF_ERROR(eval_args(e, 1, scope, args));
      return call(fn, args, e);
    }
    case T::kFilter: {
      FT_ASSIGN_OR_RETURN(Value input, eval(*e.args[0], scope));
      CallArgs args;
      FT_RETURN_IF_ERROR(eval_args(e, 1, scope, args));
      auto r = apply_filter(e.name, input, args);
      if (!r.ok()) return at_line(e.line, r.status());
      return r;
    }
    case T::kTest: {
      FT_ASSIGN_OR_RETURN(Value input, eval(*e.args[0], scope));
      CallArgs args;
      FT_RETURN_IF_ERROR(eval_args(e, 1, scope, args));
      auto r = apply_test(e.name, input, args);
      if (!r.ok()) return at_line(e.line, r.status());
      return Value::from_bool(r.value() != e.negated);
    }
    case T::kUnary: {
      FT_ASSIGN_OR_RETURN(Value v, eval(*e.args[0], scope));
      if (e.name == "not") return Value::from_bool(!v.truthy());
      if (v.is_undefined()) return at_line(e.line, undefined_error(v));
      if (!v.is_number())
        return at_line(e.line, invalid_argument(std::string("bad operand type for unary ") + e.name + ": '" +
                                                kind_name(v) + "'"));
      if (e.name == "+") return v.kind == Kind::kBool ? Value::from_int(v.as_int()) : v;
      return v.kind == Kind::kFloat ? Value::from_float(-v.number) : Value::from_int(-v.as_int());
    }
    case T::kBinary: return eval_binary(e, scope);
    case T::kCompare: return eval_compare(e, scope);
    case T::kCondition: {
      FT_ASSIGN_OR_RETURN(Value c, eval(*e.args[0], scope));
      if (c.truthy()) return eval(*e.args[1], scope);
      if (e.args[2]) return eval(*e.args[2], scope);
      return Value::undefined("the inline if-expression evaluated to false and no else section was defined.");
    }
  }
  return internal_error("unknown expression");
}

Result<Value> Evaluator::eval_binary(const Expr& e, const ScopePtr& scope) {
  FT_ASSIGN_OR_RETURN(Value a, eval(*e.args[0], scope));
  if (e.name == "and") return a.truthy() ? eval(*e.args[1], scope) : Result<Value>(a);
  if (e.name == "or") return a.truthy() ? Result<Value>(a) : eval(*e.args[1], scope);
  FT_ASSIGN_OR_RETURN(Value b, eval(*e.args[1], scope));
  if (e.name == "~") return Value::from_string(to_str(a) + to_str(b));
  auto r = arithmetic(e.name, a, b);
  if (!r.ok()) return at_line(e.line, r.status());
  return r;
}

Result<Value> Evaluator::eval_compare(const Expr& e, const ScopePtr& scope) {
  FT_ASSIGN_OR_RETURN(Value left, eval(*e.args[0], scope));
  for (size_t i = 0; i < e.ops.size(); ++i) {
    FT_ASSIGN_OR_RETURN(Value right, eval(*e.args[i + 1], scope));
    const std::string& op = e.ops[i];
    bool ok;
    if (op == "==") ok = equals(left, right);
    else if (op == "!=") ok = !equals(left, right);
    else if (op == "in" || op == "not in") {
      auto r = contains(right, left);
      if (!r.ok()) return at_line(e.line, r.status());
      ok = r.value() == (op == "in");
    } else {
      auto c = compare(left, right);
      if (!c.ok()) return at_line(e.line, c.status());
      int v = c.value();
      ok = op == "<" ? v < 0 : op == ">" ? v > 0 : op == "<=" ? v <= 0 : v >= 0;
    }
    if (!ok) return Value::from_bool(false);
    left = std::move(right);
  }
  return Value::from_bool(true);
}

}  // namespace ft::tok::jinja
