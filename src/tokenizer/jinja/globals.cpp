// Global functions of transformers' chat-template environment: range, namespace, dict, raise_exception,
// strftime_now (local time, like Python's datetime.now().strftime).
#include <ctime>

#include "tokenizer/jinja/builtins.h"

namespace ft::tok::jinja {
namespace {

Result<Value> range(const CallArgs& a) {
  for (const Value& v : a.positional)
    if (!v.is_integral()) return invalid_argument("range() arguments must be integers");
  int64_t start = 0, stop = 0, step = 1;
  if (a.positional.size() == 1) stop = a.positional[0].as_int();
  else if (a.positional.size() >= 2) {
    start = a.positional[0].as_int();
    stop = a.positional[1].as_int();
    if (a.positional.size() >= 3) step = a.positional[2].as_int();
  } else {
    return invalid_argument("range expected at least 1 argument");
  }
  if (step == 0) return invalid_argument("range() arg 3 must not be zero");
  List out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= 100000) return invalid_argument("range too big (more than 100000 items)");
    out.push_back(Value::from_int(i));
  }
  return Value::from_list(std::move(out));
}

// namespace(mapping?, **attrs) and dict(**items).
Result<Value> mapping_of(const CallArgs& a, bool as_namespace) {
  Dict d;
  for (const Value& p : a.positional) {
    if (!p.is_dict()) return invalid_argument("expected a mapping as positional argument");
    for (const auto& [k, v] : p.dict->items) d.set(k, v);
  }
  for (const auto& [k, v] : a.keyword) d.set(k, v);
  return as_namespace ? Value::namespace_of(std::move(d)) : Value::from_dict(std::move(d));
}

Result<Value> strftime_now(const CallArgs& a) {
  if (a.positional.empty() || !a.positional[0].is_string()) return invalid_argument("strftime_now(format) needs a string");
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[256];
  size_t n = std::strftime(buf, sizeof(buf), a.positional[0].str.c_str(), &local);
  return Value::from_string(std::string(buf, n));
}

}  // namespace

Dict make_globals() {
  Dict g;
  g.set("range", Value::from_function(range));
  g.set("namespace", Value::from_function([](const CallArgs& a) { return mapping_of(a, true); }));
  g.set("dict", Value::from_function([](const CallArgs& a) { return mapping_of(a, false); }));
  g.set("raise_exception", Value::from_function([](const CallArgs& a) -> Result<Value> {
          return invalid_argument(a.positional.empty() ? std::string("raise_exception called") : to_str(a.positional[0]));
        }));
  g.set("strftime_now", Value::from_function(strftime_now));
  return g;
}

}  // namespace ft::tok::jinja
