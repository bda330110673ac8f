// Jinja runtime values: Python str/repr, equality, ordering, iteration and length.
#include "tokenizer/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "tokenizer/jinja/py_str.h"

namespace ft::tok::jinja {

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value value) {
  for (auto& [k, v] : items)
    if (k == key) {
      v = std::move(value);
      return;
    }
  items.emplace_back(key, std::move(value));
}

const Value* CallArgs::kwarg(std::string_view name) const {
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

const Value* CallArgs::arg(size_t i, std::string_view name) const {
  if (i < positional.size()) return &positional[i];
  return kwarg(name);
}

bool Value::truthy() const {
  switch (kind) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return boolean;
    case Kind::kInt: return integer != 0;
    case Kind::kFloat: return number != 0;
    case Kind::kString: return !str.empty();
    case Kind::kList: return !list->empty();
    case Kind::kDict: return !dict->items.empty();
    case Kind::kNamespace:
    case Kind::kFunction: return true;
  }
  return false;
}

const char* kind_name(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kFunction: return "function";
  }
  return "?";
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // "-d.ddde+XX"
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t e = sci.find('e');
  int exp = std::stoi(sci.substr(e + 1));
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  std::string out = neg ? "-" : "";
  if (exp < -4 || exp >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out.append(".").append(digits, 1);
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return out + eb;
  }
  if (exp < 0) return out.append("0.").append(static_cast<size_t>(-exp - 1), '0').append(digits);
  size_t int_len = static_cast<size_t>(exp) + 1;
  if (digits.size() <= int_len) return out + digits + std::string(int_len - digits.size(), '0') + ".0";
  return out.append(digits, 0, int_len).append(".").append(digits, int_len);
}

namespace {
std::string string_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
  char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (char32_t c : utf8_decode(s)) {
    if (c == static_cast<char32_t>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof(b), "\\x%02x", static_cast<unsigned>(c));
      out += b;
    } else utf8_append(out, c);
  }
  return out + q;
}
}  // namespace

std::string to_repr(const Value& v) {
  switch (v.kind) {
    case Kind::kString: return string_repr(v.str);
    case Kind::kList: {
      std::string out = v.tuple ? "(" : "[";
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += ", ";
        out += to_repr((*v.list)[i]);
      }
      if (v.tuple && v.list->size() == 1) out += ",";
      return out + (v.tuple ? ")" : "]");
    }
    case Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.dict->items) {
        if (!first) out += ", ";
        out.append(string_repr(k)).append(": ").append(to_repr(x));
        first = false;
      }
      return out + "}";
    }
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return v.boolean ? "True" : "False";
    case Kind::kInt: return std::to_string(v.integer);
    case Kind::kFloat: return float_repr(v.number);
    case Kind::kString: return v.str;
    case Kind::kList:
    case Kind::kDict: return to_repr(v);
    case Kind::kNamespace: return "<Namespace>";
    case Kind::kFunction: return "<function>";
  }
  return "";
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return a.str == b.str;
    case Kind::kList:
      if (a.list->size() != b.list->size()) return false;
      for (size_t i = 0; i < a.list->size(); ++i)
        if (!equals((*a.list)[i], (*b.list)[i])) return false;
      return true;
    case Kind::kDict:
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, x] : a.dict->items) {
        const Value* y = b.dict->find(k);
        if (!y || !equals(x, *y)) return false;
      }
      return true;
    default: return a.dict == b.dict && a.fn == b.fn;
  }
}

Result<int> compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) return a.str < b.str ? -1 : a.str > b.str ? 1 : 0;  // UTF-8 bytes order = code points
  if (a.is_list() && b.is_list()) {
    for (size_t i = 0; i < a.list->size() && i < b.list->size(); ++i) {
      FT_ASSIGN_OR_RETURN(int c, compare((*a.list)[i], (*b.list)[i]));
      if (c) return c;
    }
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  return invalid_argument(std::string("'<' not supported between instances of '") + kind_name(a) + "' and '" +
                          kind_name(b) + "'");
}

Result<List> iterate(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined: return List{};
    case Kind::kList: return *v.list;
    case Kind::kDict: {
      List keys;
      for (const auto& [k, x] : v.dict->items) keys.push_back(Value::from_string(k));
      return keys;
    }
    case Kind::kString: {
      List chars;
      std::string one;
      for (char32_t c : utf8_decode(v.str)) {
        one.clear();
        utf8_append(one, c);
        chars.push_back(Value::from_string(one));
      }
      return chars;
    }
    default: return invalid_argument(std::string("'") + kind_name(v) + "' object is not iterable");
  }
}

Result<int64_t> length(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined: return int64_t{0};
    case Kind::kString: return static_cast<int64_t>(utf8_length(v.str));
    case Kind::kList: return static_cast<int64_t>(v.list->size());
    case Kind::kDict: return static_cast<int64_t>(v.dict->items.size());
    default: return invalid_argument(std::string("object of type '") + kind_name(v) + "' has no len()");
  }
}

Status undefined_error(const Value& v) { return invalid_argument(v.str.empty() ? "value is undefined" : v.str); }

}  // namespace ft::tok::jinja
