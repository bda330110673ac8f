// Jinja2's built-in tests (`x is defined`, `x is string`, `x is equalto 3`, ...) with Python's type rules.
#include <cmath>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/py_str.h"

namespace ft::tok::jinja {

Result<bool> apply_test(const std::string& name, const Value& v, const CallArgs& a) {
  const Value* other = a.arg(0, "other");
  auto need_other = [&]() -> Status {
    return other ? ok_status() : invalid_argument("test '" + name + "' needs an argument");
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.kind == Kind::kBool;
  if (name == "true") return v.kind == Kind::kBool && v.boolean;
  if (name == "false") return v.kind == Kind::kBool && !v.boolean;
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == Kind::kInt;
  if (name == "float") return v.kind == Kind::kFloat;
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (name == "sequence") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (name == "callable") return v.kind == Kind::kFunction;
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    CallArgs none;
    auto method = get_attribute(v, name == "lower" ? "islower" : "isupper");
    if (!method.ok()) return method.status();
    FT_ASSIGN_OR_RETURN(Value r, (*method.value().fn)(none));
    return r.boolean;
  }
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (!v.is_integral()) return invalid_argument("test '" + name + "' needs an integer");
    int64_t mod = 2;
    if (name == "divisibleby") {
      FT_RETURN_IF_ERROR(need_other());
      if (!other->is_integral() || other->as_int() == 0) return invalid_argument("divisibleby needs a nonzero integer");
      mod = other->as_int();
    }
    int64_t r = ((v.as_int() % mod) + mod) % mod;
    return name == "odd" ? r == 1 : r == 0;
  }
  if (name == "equalto" || name == "eq" || name == "==" || name == "sameas") {
    FT_RETURN_IF_ERROR(need_other());
    if (name == "sameas" && v.kind != other->kind) return false;
    return equals(v, *other);
  }
  if (name == "ne" || name == "!=") {
    FT_RETURN_IF_ERROR(need_other());
    return !equals(v, *other);
  }
  if (name == "lt" || name == "<" || name == "lessthan" || name == "le" || name == "<=" || name == "gt" ||
      name == ">" || name == "greaterthan" || name == "ge" || name == ">=") {
    FT_RETURN_IF_ERROR(need_other());
    FT_ASSIGN_OR_RETURN(int c, compare(v, *other));
    if (name == "lt" || name == "<" || name == "lessthan") return c < 0;
    if (name == "le" || name == "<=") return c <= 0;
    if (name == "gt" || name == ">" || name == "greaterthan") return c > 0;
    return c >= 0;
  }
  if (name == "in") {
    FT_RETURN_IF_ERROR(need_other());
    return contains(*other, v);
  }
  return unsupported("no test named '" + name + "'");
}

}  // namespace ft::tok::jinja
