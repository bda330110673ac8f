// Typed, validated reads of request JSON fields; a wrong type or range throws RequestError naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace ft::server {

using Json = nlohmann::ordered_json;

// The value of `key`, or nullptr when it is absent or null.
const Json* field(const Json& object, const char* key);
const Json& require_field(const Json& object, const char* key);

std::optional<std::string> opt_string(const Json& object, const char* key);
std::optional<bool> opt_bool(const Json& object, const char* key);
std::optional<double> opt_number(const Json& object, const char* key, double lo, double hi);
std::optional<int64_t> opt_integer(const Json& object, const char* key, int64_t lo, int64_t hi);
std::string require_string(const Json& object, const char* key);

// Compact JSON text that never throws on invalid UTF-8 (it is replaced).
std::string dump(const Json& j);
// "call_" + 24 random hex digits (thread-safe).
std::string random_id(const char* prefix);
int64_t unix_seconds();

}  // namespace ft::server
