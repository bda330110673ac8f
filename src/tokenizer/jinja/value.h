// Jinja runtime values with Python semantics: undefined, none, bool, int, float, str, list, dict, namespace, callable.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "freetoken/status.h"

namespace ft::tok::jinja {

struct Value;
using List = std::vector<Value>;

// An insertion-ordered string-keyed map (Python dicts keep insertion order).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);
};

// Arguments of a call: positional, then keyword; `caller` is set by {% call %}.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  const Value* kwarg(std::string_view name) const;
  // Positional i, else keyword `name`, else nullptr.
  const Value* arg(size_t i, std::string_view name) const;
};
using Function = std::function<Result<Value>(const CallArgs&)>;

enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kFunction };

struct Value {
  Kind kind = Kind::kUndefined;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  std::string str;  // the string; for undefined, what was missing (for error messages)
  bool tuple = false;  // a list that prints as a Python tuple: (1, 2)
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;  // dict and namespace attributes
  std::shared_ptr<Function> fn;

  static Value undefined(std::string what) { Value v; v.str = std::move(what); return v; }
  static Value none() { Value v; v.kind = Kind::kNone; return v; }
  static Value from_bool(bool b) { Value v; v.kind = Kind::kBool; v.boolean = b; return v; }
  static Value from_int(int64_t i) { Value v; v.kind = Kind::kInt; v.integer = i; return v; }
  static Value from_float(double d) { Value v; v.kind = Kind::kFloat; v.number = d; return v; }
  static Value from_string(std::string s) { Value v; v.kind = Kind::kString; v.str = std::move(s); return v; }
  static Value from_list(List l) {
    Value v; v.kind = Kind::kList; v.list = std::make_shared<List>(std::move(l)); return v;
  }
  static Value from_tuple(List l) { Value v = from_list(std::move(l)); v.tuple = true; return v; }
  static Value from_dict(Dict d) {
    Value v; v.kind = Kind::kDict; v.dict = std::make_shared<Dict>(std::move(d)); return v;
  }
  static Value namespace_of(Dict d) { Value v = from_dict(std::move(d)); v.kind = Kind::kNamespace; return v; }
  static Value from_function(Function f) {
    Value v; v.kind = Kind::kFunction; v.fn = std::make_shared<Function>(std::move(f)); return v;
  }

  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_none() const { return kind == Kind::kNone; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_list() const { return kind == Kind::kList; }
  bool is_dict() const { return kind == Kind::kDict; }
  // int, float or bool (a Python bool is an int).
  bool is_number() const { return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool; }
  bool is_integral() const { return kind == Kind::kInt || kind == Kind::kBool; }
  int64_t as_int() const { return kind == Kind::kBool ? boolean : integer; }
  double as_double() const { return kind == Kind::kFloat ? number : static_cast<double>(as_int()); }
  bool truthy() const;
};

const char* kind_name(const Value& v);  // Python type name: 'str', 'list', 'dict', ...
std::string to_str(const Value& v);     // Python str(); undefined prints as ""
std::string to_repr(const Value& v);    // Python repr()
std::string float_repr(double d);       // Python repr(float): shortest round trip, '1.0', '1e+16'
bool equals(const Value& a, const Value& b);
// Python a < b: -1, 0, 1; error for unordered types.
Result<int> compare(const Value& a, const Value& b);
// Items of an iterable (list: elements, dict: keys, string: characters, undefined: none).
Result<List> iterate(const Value& v);
// Python len() (code points for strings).
Result<int64_t> length(const Value& v);
Status undefined_error(const Value& v);

}  // namespace ft::tok::jinja
