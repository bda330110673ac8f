// JSON <-> Jinja values (see value_json.h); the dump follows CPython's json encoder.
#include "tokenizer/jinja/value_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tokenizer/jinja/py_str.h"

namespace ft::tok::jinja {

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::from_bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::from_int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value::from_int(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Value::from_float(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::from_string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List l;
      l.reserve(j.size());
      for (const auto& x : j) l.push_back(from_json(x));
      return Value::from_list(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      d.items.reserve(j.size());
      for (const auto& [k, x] : j.items()) d.items.emplace_back(k, from_json(x));
      return Value::from_dict(std::move(d));
    }
    default: return Value::none();
  }
}

namespace {

void dump_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  for (char32_t c : utf8_decode(s)) {
    char buf[16];
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || (ensure_ascii && c > 0x7e)) {
          if (c >= 0x10000) {
            char32_t v = c - 0x10000;
            std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", static_cast<unsigned>(0xd800 | (v >> 10)),
                          static_cast<unsigned>(0xdc00 | (v & 0x3ff)));
          } else {
            std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
          }
          out += buf;
        } else {
          utf8_append(out, c);
        }
    }
  }
  out += '"';
}

Status dump(const Value& v, const DumpOptions& o, int depth, std::string& out) {
  const std::string item_sep = o.item_separator.value_or(o.indent ? "," : ", ");
  const std::string key_sep = o.key_separator.value_or(": ");
  auto newline = [&](int d) {
    if (!o.indent) return;
    out += '\n';
    for (int i = 0; i < d; ++i) out += *o.indent;
  };
  switch (v.kind) {
    case Kind::kNone: out += "null"; return ok_status();
    case Kind::kBool: out += v.boolean ? "true" : "false"; return ok_status();
    case Kind::kInt: out += std::to_string(v.integer); return ok_status();
    case Kind::kFloat:
      if (std::isnan(v.number)) out += "NaN";
      else if (std::isinf(v.number)) out += v.number > 0 ? "Infinity" : "-Infinity";
      else out += float_repr(v.number);
      return ok_status();
    case Kind::kString: dump_string(v.str, o.ensure_ascii, out); return ok_status();
    case Kind::kList: {
      if (v.list->empty()) {
        out += "[]";
        return ok_status();
      }
      out += '[';
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        FT_RETURN_IF_ERROR(dump((*v.list)[i], o, depth + 1, out));
      }
      newline(depth);
      out += ']';
      return ok_status();
    }
    case Kind::kDict: {
      if (v.dict->items.empty()) {
        out += "{}";
        return ok_status();
      }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : v.dict->items) items.push_back(&kv);
      if (o.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        dump_string(items[i]->first, o.ensure_ascii, out);
        out += key_sep;
        FT_RETURN_IF_ERROR(dump(items[i]->second, o, depth + 1, out));
      }
      newline(depth);
      out += '}';
      return ok_status();
    }
    case Kind::kUndefined: return undefined_error(v);
    default:
      return invalid_argument(std::string("Object of type ") + kind_name(v) + " is not JSON serializable");
  }
}

}  // namespace

Result<std::string> dump_json(const Value& v, const DumpOptions& options) {
  std::string out;
  FT_RETURN_IF_ERROR(dump(v, options, 0, out));
  return out;
}

}  // namespace ft::tok::jinja
