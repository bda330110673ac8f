// JSON <-> Jinja values: request JSON in (key order kept), Python json.dumps out (the `tojson` filter).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "freetoken/status.h"
#include "tokenizer/jinja/value.h"

namespace ft::tok::jinja {

Value from_json(const nlohmann::ordered_json& j);

struct DumpOptions {
  bool ensure_ascii = false;      // transformers' tojson default
  std::optional<std::string> indent;  // None, or the indent string (an int n means n spaces)
  std::optional<std::string> item_separator, key_separator;
  bool sort_keys = false;
};

// Python json.dumps(v, ...) byte for byte; undefined or callables are an error.
Result<std::string> dump_json(const Value& v, const DumpOptions& options);

}  // namespace ft::tok::jinja
