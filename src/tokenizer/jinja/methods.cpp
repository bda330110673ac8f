// Attribute, item and slice access with Jinja2's lookup order, and the str/dict methods templates call.
#include <algorithm>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/py_str.h"

namespace ft::tok::jinja {
namespace {

Status arg_error(const std::string& method, const std::string& what) {
  return invalid_argument(method + "() " + what);
}

Result<std::optional<std::string>> optional_str(const CallArgs& a, size_t i, const char* name, const char* method) {
  const Value* v = a.arg(i, name);
  if (!v || v->is_none()) return std::optional<std::string>{};
  if (!v->is_string()) return arg_error(method, std::string("argument '") + name + "' must be str or None");
  return std::optional<std::string>{v->str};
}

Result<std::string> required_str(const CallArgs& a, size_t i, const char* name, const char* method) {
  const Value* v = a.arg(i, name);
  if (!v || !v->is_string()) return arg_error(method, std::string("argument '") + name + "' must be str");
  return v->str;
}

int64_t optional_int(const CallArgs& a, size_t i, const char* name, int64_t def) {
  const Value* v = a.arg(i, name);
  return v && v->is_integral() ? v->as_int() : def;
}

Value string_list(const std::vector<std::string>& parts) {
  List l;
  for (const auto& p : parts) l.push_back(Value::from_string(p));
  return Value::from_list(std::move(l));
}

// str.startswith / endswith with a str or a tuple of str.
Result<Value> affix(const std::string& s, const CallArgs& a, bool start) {
  const Value* v = a.arg(0, "prefix");
  if (!v) return arg_error(start ? "startswith" : "endswith", "takes at least 1 argument");
  List options = v->is_list() ? *v->list : List{*v};
  for (const Value& o : options) {
    if (!o.is_string()) return arg_error(start ? "startswith" : "endswith", "argument must be str or a tuple of str");
    bool hit = o.str.size() <= s.size() &&
               (start ? s.compare(0, o.str.size(), o.str) == 0 : s.compare(s.size() - o.str.size(), o.str.size(), o.str) == 0);
    if (hit) return Value::from_bool(true);
  }
  return Value::from_bool(false);
}

Result<Value> string_method(const std::string& s, const std::string& name, const CallArgs& a) {
  if (name == "startswith" || name == "endswith") return affix(s, a, name == "startswith");
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    FT_ASSIGN_OR_RETURN(auto chars, optional_str(a, 0, "chars", name.c_str()));
    return Value::from_string(py_strip(s, chars ? std::optional<std::string_view>(*chars) : std::nullopt,
                                       name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    FT_ASSIGN_OR_RETURN(auto sep, optional_str(a, 0, "sep", name.c_str()));
    if (sep && sep->empty()) return invalid_argument("empty separator");
    return string_list(py_split(s, sep ? std::optional<std::string_view>(*sep) : std::nullopt,
                                optional_int(a, 1, "maxsplit", -1), name == "rsplit"));
  }
  if (name == "splitlines") return string_list(py_splitlines(s));
  if (name == "replace") {
    FT_ASSIGN_OR_RETURN(std::string old, required_str(a, 0, "old", "replace"));
    FT_ASSIGN_OR_RETURN(std::string repl, required_str(a, 1, "new", "replace"));
    return Value::from_string(py_replace(s, old, repl, optional_int(a, 2, "count", -1)));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    FT_ASSIGN_OR_RETURN(std::string sub, required_str(a, 0, "sub", name.c_str()));
    if (name == "count") return Value::from_int(py_count(s, sub));
    int64_t at = py_find(s, sub, name[0] == 'r');
    if (at < 0 && name.find("index") != std::string::npos) return invalid_argument("substring not found");
    return Value::from_int(at);
  }
  if (name == "upper") return Value::from_string(py_upper(s));
  if (name == "lower") return Value::from_string(py_lower(s));
  if (name == "title") return Value::from_string(py_title(s));
  if (name == "capitalize") return Value::from_string(py_capitalize(s));
  if (name == "join") {
    const Value* items = a.arg(0, "iterable");
    if (!items) return arg_error("join", "takes exactly one argument");
    FT_ASSIGN_OR_RETURN(List l, iterate(*items));
    std::string out;
    for (size_t i = 0; i < l.size(); ++i) {
      if (!l[i].is_string()) return invalid_argument("sequence item " + std::to_string(i) + ": expected str instance");
      if (i) out += s;
      out += l[i].str;
    }
    return Value::from_string(out);
  }
  if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum") {
    std::vector<char32_t> cps = utf8_decode(s);
    bool ok = !cps.empty();
    for (char32_t c : cps) {
      bool d = py_is_digit(c), al = py_is_alpha(c);
      ok = ok && (name == "isdigit" ? d : name == "isalpha" ? al : name == "isspace" ? py_isspace(c) : (d || al));
    }
    return Value::from_bool(ok);
  }
  if (name == "islower" || name == "isupper") {
    bool upper = name == "isupper", cased = false, ok = true;
    for (char32_t c : utf8_decode(s)) {
      std::string one;
      utf8_append(one, c);
      std::string flipped = upper ? py_lower(one) : py_upper(one);
      if (flipped != one) {
        cased = true;
        if ((upper ? py_upper(one) : py_lower(one)) != one) ok = false;
      }
    }
    return Value::from_bool(cased && ok);
  }
  return invalid_argument("'str' object has no attribute '" + name + "'");
}

bool is_string_method(const std::string& n) {
  static const char* const kNames[] = {"startswith", "endswith", "strip",   "lstrip",  "rstrip",     "split",
                                       "rsplit",     "splitlines", "replace", "find",  "rfind",      "index",
                                       "rindex",     "count",    "upper",   "lower",   "title",      "capitalize",
                                       "join",       "isdigit",  "isalpha", "isspace", "isalnum",    "islower",
                                       "isupper"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

Value dict_items(const Dict& d) {
  List l;
  for (const auto& [k, v] : d.items) l.push_back(Value::from_tuple({Value::from_string(k), v}));
  return Value::from_list(std::move(l));
}

Result<Value> dict_method(const Value& obj, const std::string& name, const CallArgs& a) {
  const Dict& d = *obj.dict;
  if (name == "get") {
    const Value* key = a.arg(0, "key");
    if (!key) return arg_error("get", "expected at least 1 argument");
    const Value* def = a.arg(1, "default");
    const Value* hit = key->is_string() ? d.find(key->str) : nullptr;
    return hit ? *hit : def ? *def : Value::none();
  }
  if (name == "items") return dict_items(d);
  List l;
  for (const auto& [k, v] : d.items) l.push_back(name == "keys" ? Value::from_string(k) : v);
  return Value::from_list(std::move(l));
}

}  // namespace

Result<Value> get_attribute(const Value& obj, const std::string& name) {
  switch (obj.kind) {
    case Kind::kUndefined: return undefined_error(obj);
    case Kind::kString:
      if (is_string_method(name)) {
        std::string s = obj.str;
        return Value::from_function([s, name](const CallArgs& a) { return string_method(s, name, a); });
      }
      break;
    case Kind::kDict:
      if (name == "get" || name == "items" || name == "keys" || name == "values")
        return Value::from_function([obj, name](const CallArgs& a) { return dict_method(obj, name, a); });
      if (const Value* v = obj.dict->find(name)) return *v;
      return Value::undefined("'dict object' has no attribute '" + name + "'");
    case Kind::kNamespace:
      if (const Value* v = obj.dict->find(name)) return *v;
      break;
    default: break;
  }
  return Value::undefined(std::string("'") + kind_name(obj) + " object' has no attribute '" + name + "'");
}

Result<Value> get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return undefined_error(obj);
  if ((obj.is_list() || obj.is_string()) && key.is_integral()) {
    int64_t n = obj.is_list() ? static_cast<int64_t>(obj.list->size()) : 0;
    std::vector<char32_t> cps;
    if (obj.is_string()) {
      cps = utf8_decode(obj.str);
      n = static_cast<int64_t>(cps.size());
    }
    int64_t i = key.as_int() < 0 ? key.as_int() + n : key.as_int();
    if (i < 0 || i >= n)
      return Value::undefined(std::string("'") + kind_name(obj) + " object' has no element " + to_str(key));
    if (obj.is_list()) return (*obj.list)[static_cast<size_t>(i)];
    return Value::from_string(utf8_encode(cps, static_cast<size_t>(i), static_cast<size_t>(i) + 1));
  }
  if ((obj.is_dict() || obj.kind == Kind::kNamespace) && key.is_string()) {
    if (const Value* v = obj.dict->find(key.str)) return *v;
  }
  if (key.is_string()) return get_attribute(obj, key.str);
  return Value::undefined(std::string("'") + kind_name(obj) + " object' has no element " + to_repr(key));
}

Result<Value> get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (!obj.is_list() && !obj.is_string())
    return invalid_argument(std::string("'") + kind_name(obj) + "' object is not subscriptable");
  for (const Value* v : {&start, &stop, &step})
    if (!v->is_undefined() && !v->is_none() && !v->is_integral())
      return invalid_argument("slice indices must be integers or None");
  std::vector<char32_t> cps;
  int64_t n = obj.is_list() ? static_cast<int64_t>(obj.list->size()) : 0;
  if (obj.is_string()) {
    cps = utf8_decode(obj.str);
    n = static_cast<int64_t>(cps.size());
  }
  auto given = [](const Value& v) { return v.is_integral(); };
  int64_t st = given(step) ? step.as_int() : 1;
  if (st == 0) return invalid_argument("slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t def) {
    if (!given(v)) return def;
    int64_t i = v.as_int();
    if (i < 0) i += n;
    if (st > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  int64_t b = clamp(start, st > 0 ? 0 : n - 1), e = clamp(stop, st > 0 ? n : -1);
  List items;
  std::string s;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) {
    if (obj.is_list()) items.push_back((*obj.list)[static_cast<size_t>(i)]);
    else utf8_append(s, cps[static_cast<size_t>(i)]);
  }
  return obj.is_list() ? Value::from_list(std::move(items)) : Value::from_string(std::move(s));
}

Result<bool> contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Kind::kUndefined: return false;
    case Kind::kString:
      if (!item.is_string())
        return invalid_argument(std::string("'in <string>' requires string as left operand, not ") + kind_name(item));
      return container.str.find(item.str) != std::string::npos;
    case Kind::kList:
      for (const Value& x : *container.list)
        if (equals(x, item)) return true;
      return false;
    case Kind::kDict: return item.is_string() && container.dict->find(item.str) != nullptr;
    default: return invalid_argument(std::string("argument of type '") + kind_name(container) + "' is not iterable");
  }
}

}  // namespace ft::tok::jinja
