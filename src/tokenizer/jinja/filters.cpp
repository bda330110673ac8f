// Jinja2's built-in filters (and transformers' `tojson`), with the same argument names and defaults.
#include <algorithm>
#include <cmath>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/py_str.h"
#include "tokenizer/jinja/value_json.h"

namespace ft::tok::jinja {
namespace {

const Value kNoValue;

Value arg_or(const CallArgs& a, size_t i, const char* name, const Value& def = kNoValue) {
  const Value* v = a.arg(i, name);
  return v ? *v : def;
}

// Jinja's soft_str: strings stay, everything else goes through str().
std::string soft_str(const Value& v) { return to_str(v); }

Result<Value> do_tojson(const Value& input, const CallArgs& a) {
  DumpOptions o;
  o.ensure_ascii = arg_or(a, 0, "ensure_ascii").truthy();
  const Value indent = arg_or(a, 1, "indent");
  if (indent.is_integral()) o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent.as_int())), ' ');
  else if (indent.is_string()) o.indent = indent.str;
  const Value seps = arg_or(a, 2, "separators");
  if (seps.is_list() && seps.list->size() == 2) {
    o.item_separator = to_str((*seps.list)[0]);
    o.key_separator = to_str((*seps.list)[1]);
  }
  o.sort_keys = arg_or(a, 3, "sort_keys").truthy();
  FT_ASSIGN_OR_RETURN(std::string s, dump_json(input, o));
  return Value::from_string(std::move(s));
}

Result<Value> do_join(const Value& input, const CallArgs& a) {
  FT_ASSIGN_OR_RETURN(List items, iterate(input));
  std::string sep = arg_or(a, 0, "d").is_string() ? arg_or(a, 0, "d").str : "";
  const Value attr = arg_or(a, 1, "attribute");
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    Value item = items[i];
    if (attr.is_string()) {
      FT_ASSIGN_OR_RETURN(item, get_item(item, attr));
    }
    if (i) out += sep;
    out += soft_str(item);
  }
  return Value::from_string(out);
}

Result<Value> do_indent(const Value& input, const CallArgs& a) {
  const Value width = arg_or(a, 0, "width", Value::from_int(4));
  std::string ind = width.is_string() ? width.str : std::string(static_cast<size_t>(std::max<int64_t>(0, width.as_int())), ' ');
  bool first = arg_or(a, 1, "first").truthy(), blank = arg_or(a, 2, "blank").truthy();
  std::vector<std::string> lines = py_splitlines(soft_str(input) + "\n");
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv.append("\n").append(ind);
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += '\n';
      if (!lines[i].empty()) rv.append(ind).append(lines[i]);
    }
  }
  if (first) rv = ind + rv;
  return Value::from_string(rv);
}

// The items of `input` (attribute-mapped when attribute= is given) for map/select/sort/sum/unique.
Result<Value> attribute_of(const Value& item, const Value& attr) {
  if (!attr.is_string() && !attr.is_integral()) return item;
  if (attr.is_integral()) return get_item(item, attr);
  Value cur = item;
  size_t pos = 0;
  const std::string& path = attr.str;
  while (true) {
    size_t dot = path.find('.', pos);
    std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    FT_ASSIGN_OR_RETURN(cur, get_item(cur, Value::from_string(part)));
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
}

// select / reject / selectattr / rejectattr.
Result<Value> do_select(const Value& input, const CallArgs& a, bool by_attr, bool keep) {
  FT_ASSIGN_OR_RETURN(List items, iterate(input));
  size_t first_test_arg = by_attr ? 1 : 0;
  const Value* test = a.arg(first_test_arg, "");
  CallArgs test_args;
  for (size_t i = first_test_arg + 1; i < a.positional.size(); ++i) test_args.positional.push_back(a.positional[i]);
  List out;
  for (const Value& item : items) {
    Value subject = item;
    if (by_attr) {
      FT_ASSIGN_OR_RETURN(subject, attribute_of(item, arg_or(a, 0, "attribute")));
    }
    bool pass;
    if (test && test->is_string()) {
      FT_ASSIGN_OR_RETURN(pass, apply_test(test->str, subject, test_args));
    } else {
      pass = subject.truthy();
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::from_list(std::move(out));
}

Result<Value> do_map(const Value& input, const CallArgs& a) {
  FT_ASSIGN_OR_RETURN(List items, iterate(input));
  List out;
  const Value* attr = a.kwarg("attribute");
  const Value* def = a.kwarg("default");
  CallArgs rest;
  for (size_t i = 1; i < a.positional.size(); ++i) rest.positional.push_back(a.positional[i]);
  for (const Value& item : items) {
    if (attr) {
      FT_ASSIGN_OR_RETURN(Value v, attribute_of(item, *attr));
      out.push_back(v.is_undefined() && def ? *def : v);
    } else if (!a.positional.empty() && a.positional[0].is_string()) {
      FT_ASSIGN_OR_RETURN(Value v, apply_filter(a.positional[0].str, item, rest));
      out.push_back(v);
    } else {
      return invalid_argument("map requires a filter name or attribute=");
    }
  }
  return Value::from_list(std::move(out));
}

Result<List> sorted(List items, const Value& attr, bool case_sensitive, bool reverse) {
  Status err;
  auto key = [&](const Value& v) -> Value {
    auto k = attribute_of(v, attr);
    Value x = k.ok() ? k.value() : v;
    return x.is_string() && !case_sensitive ? Value::from_string(py_lower(x.str)) : x;
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    auto c = compare(key(x), key(y));
    if (!c.ok()) {
      err = c.status();
      return false;
    }
    return reverse ? c.value() > 0 : c.value() < 0;
  });
  if (!err.ok()) return err;
  return items;
}

Result<Value> number_filter(const Value& input, const CallArgs& a, bool to_int) {
  const Value def = arg_or(a, 0, "default", to_int ? Value::from_int(0) : Value::from_float(0.0));
  if (input.is_number()) return to_int ? Value::from_int(static_cast<int64_t>(input.as_double())) : Value::from_float(input.as_double());
  if (!input.is_string()) return def;
  std::string s = py_strip(input.str, std::nullopt, true, true);
  char* end = nullptr;
  if (to_int) {
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end && *end == '\0') return Value::from_int(v);
  }
  double d = std::strtod(s.c_str(), &end);
  if (s.empty() || !end || *end != '\0') return def;
  return to_int ? Value::from_int(static_cast<int64_t>(d)) : Value::from_float(d);
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

Result<Value> apply_filter(const std::string& name, const Value& input, const CallArgs& a) {
  if (name == "tojson") return do_tojson(input, a);
  if (name == "safe") return input;
  if (name == "string") return Value::from_string(soft_str(input));
  if (name == "trim") {
    const Value chars = arg_or(a, 0, "chars");
    return Value::from_string(py_strip(soft_str(input), chars.is_string() ? std::optional<std::string_view>(chars.str)
                                                                          : std::nullopt, true, true));
  }
  if (name == "length" || name == "count") {
    FT_ASSIGN_OR_RETURN(int64_t n, length(input));
    return Value::from_int(n);
  }
  if (name == "lower") return Value::from_string(py_lower(soft_str(input)));
  if (name == "upper") return Value::from_string(py_upper(soft_str(input)));
  if (name == "capitalize") return Value::from_string(py_capitalize(soft_str(input)));
  if (name == "title") {  // capitalises after runs of [-\s({\[<]
    std::string out;
    bool start = true;
    for (char32_t c : utf8_decode(soft_str(input))) {
      bool sep = py_isspace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
      std::string one;
      utf8_append(one, c);
      out += sep ? one : start ? py_upper(one) : py_lower(one);
      start = sep;
    }
    return Value::from_string(out);
  }
  if (name == "replace") {
    const Value old = arg_or(a, 0, "old");
    const Value repl = arg_or(a, 1, "new");
    const Value count = arg_or(a, 2, "count");
    return Value::from_string(py_replace(soft_str(input), soft_str(old), soft_str(repl),
                                         count.is_integral() ? count.as_int() : -1));
  }
  if (name == "default" || name == "d") {
    bool boolean = arg_or(a, 1, "boolean").truthy();
    if (input.is_undefined() || (boolean && !input.truthy())) return arg_or(a, 0, "default_value", Value::from_string(""));
    return input;
  }
  if (name == "join") return do_join(input, a);
  if (name == "first" || name == "last") {
    FT_ASSIGN_OR_RETURN(List items, iterate(input));
    if (items.empty()) return Value::undefined("No " + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") {
    FT_ASSIGN_OR_RETURN(List items, iterate(input));
    return Value::from_list(std::move(items));
  }
  if (name == "items") {
    if (input.is_undefined()) return Value::from_list({});
    if (!input.is_dict()) return invalid_argument("Can only get item pairs from a mapping.");
    return get_attribute(input, "items").value().fn->operator()(CallArgs{});
  }
  if (name == "reverse") {
    if (input.is_string()) return get_slice(input, Value(), Value(), Value::from_int(-1));
    FT_ASSIGN_OR_RETURN(List items, iterate(input));
    std::reverse(items.begin(), items.end());
    return Value::from_list(std::move(items));
  }
  if (name == "map") return do_map(input, a);
  if (name == "select" || name == "reject") return do_select(input, a, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") return do_select(input, a, true, name == "selectattr");
  if (name == "int") return number_filter(input, a, true);
  if (name == "float") return number_filter(input, a, false);
  if (name == "abs") {
    if (!input.is_number()) return invalid_argument(std::string("bad operand type for abs(): '") + kind_name(input) + "'");
    return input.kind == Kind::kFloat ? Value::from_float(std::fabs(input.number)) : Value::from_int(std::llabs(input.as_int()));
  }
  if (name == "round") {
    int64_t precision = arg_or(a, 0, "precision", Value::from_int(0)).as_int();
    std::string method = arg_or(a, 1, "method", Value::from_string("common")).str;
    double scale = std::pow(10.0, static_cast<double>(precision)), x = input.as_double() * scale;
    double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);  // Python rounds halves to even
    return Value::from_float(r / scale);
  }
  if (name == "escape" || name == "e") return Value::from_string(html_escape(soft_str(input)));
  if (name == "indent") return do_indent(input, a);
  if (name == "center") {
    int64_t width = arg_or(a, 0, "width", Value::from_int(80)).as_int();
    std::string s = soft_str(input);
    int64_t n = static_cast<int64_t>(utf8_length(s));
    if (width <= n) return Value::from_string(s);
    int64_t pad = width - n, left = pad / 2 + (pad & width & 1);
    return Value::from_string(std::string(static_cast<size_t>(left), ' ') + s +
                              std::string(static_cast<size_t>(pad - left), ' '));
  }
  if (name == "wordcount") return Value::from_int(static_cast<int64_t>(py_split(soft_str(input), std::nullopt, -1, false).size()));
  if (name == "sum") {
    FT_ASSIGN_OR_RETURN(List items, iterate(input));
    Value total = arg_or(a, 1, "start", Value::from_int(0));
    for (const Value& item : items) {
      FT_ASSIGN_OR_RETURN(Value v, attribute_of(item, arg_or(a, 0, "attribute")));
      if (!v.is_number() || !total.is_number()) return invalid_argument("unsupported operand type(s) for +");
      total = total.is_integral() && v.is_integral() ? Value::from_int(total.as_int() + v.as_int())
                                                     : Value::from_float(total.as_double() + v.as_double());
    }
    return total;
  }
  if (name == "sort") {
    FT_ASSIGN_OR_RETURN(List items, iterate(input));
    FT_ASSIGN_OR_RETURN(List out, sorted(std::move(items), arg_or(a, 2, "attribute"), arg_or(a, 1, "case_sensitive").truthy(),
                                         arg_or(a, 0, "reverse").truthy()));
    return Value::from_list(std::move(out));
  }
  if (name == "dictsort") {
    if (!input.is_dict()) return invalid_argument("You can only sort by either \"key\" or \"value\"");
    bool by_value = arg_or(a, 1, "by").is_string() && arg_or(a, 1, "by").str == "value";
    FT_ASSIGN_OR_RETURN(Value pairs, apply_filter("items", input, {}));
    FT_ASSIGN_OR_RETURN(List out, sorted(*pairs.list, Value::from_int(by_value ? 1 : 0), arg_or(a, 0, "case_sensitive").truthy(),
                                         arg_or(a, 2, "reverse").truthy()));
    return Value::from_list(std::move(out));
  }
  if (name == "unique") {
    FT_ASSIGN_OR_RETURN(List items, iterate(input));
    bool cs = arg_or(a, 0, "case_sensitive").truthy();
    List out, seen;
    for (const Value& item : items) {
      FT_ASSIGN_OR_RETURN(Value k, attribute_of(item, arg_or(a, 1, "attribute")));
      if (k.is_string() && !cs) k = Value::from_string(py_lower(k.str));
      FT_ASSIGN_OR_RETURN(bool dup, contains(Value::from_list(seen), k));
      if (dup) continue;
      seen.push_back(k);
      out.push_back(item);
    }
    return Value::from_list(std::move(out));
  }
  if (name == "min" || name == "max") {
    FT_ASSIGN_OR_RETURN(List items, iterate(input));
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    FT_ASSIGN_OR_RETURN(List s, sorted(std::move(items), arg_or(a, 1, "attribute"), arg_or(a, 0, "case_sensitive").truthy(), false));
    return name == "min" ? s.front() : s.back();
  }
  if (name == "batch") {
    FT_ASSIGN_OR_RETURN(List items, iterate(input));
    int64_t n = arg_or(a, 0, "linecount", Value::from_int(1)).as_int();
    if (n <= 0) return invalid_argument("batch size must be positive");
    const Value* fill = a.arg(1, "fill_with");
    List out, cur;
    for (const Value& item : items) {
      cur.push_back(item);
      if (static_cast<int64_t>(cur.size()) == n) out.push_back(Value::from_list(std::exchange(cur, {})));
    }
    if (!cur.empty()) {
      while (fill && static_cast<int64_t>(cur.size()) < n) cur.push_back(*fill);
      out.push_back(Value::from_list(std::move(cur)));
    }
    return Value::from_list(std::move(out));
  }
  if (name == "attr") {
    const Value key = arg_or(a, 0, "name");
    return get_attribute(input, soft_str(key));
  }
  return unsupported("no filter named '" + name + "'");
}

}  // namespace ft::tok::jinja
