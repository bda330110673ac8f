// Field readers for request JSON.
#include "server/json_fields.h"

#include <chrono>
#include <cmath>
#include <random>

namespace ft::server {

const Json* field(const Json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return nullptr;
  return &*it;
}

const Json& require_field(const Json& o, const char* key) {
  const Json* v = field(o, key);
  if (!v) throw_bad_request(std::string("missing required field '") + key + "'", key);
  return *v;
}

std::optional<std::string> opt_string(const Json& o, const char* key) {
  const Json* v = field(o, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw_bad_request(std::string("'") + key + "' must be a string", key);
  return v->get<std::string>();
}

std::optional<bool> opt_bool(const Json& o, const char* key) {
  const Json* v = field(o, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw_bad_request(std::string("'") + key + "' must be a boolean", key);
  return v->get<bool>();
}

std::optional<double> opt_number(const Json& o, const char* key, double lo, double hi) {
  const Json* v = field(o, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw_bad_request(std::string("'") + key + "' must be a number", key);
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi)
    throw_bad_request(std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]",
                      key);
  return x;
}

std::optional<int64_t> opt_integer(const Json& o, const char* key, int64_t lo, int64_t hi) {
  const Json* v = field(o, key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) {
    // 16.0 is an integer to a JSON client; 16.5 is not.
    if (!v->is_number_float() || v->get<double>() != std::floor(v->get<double>()) || !std::isfinite(v->get<double>()))
      throw_bad_request(std::string("'") + key + "' must be an integer", key);
  }
  const double d = v->get<double>();
  // Compared as doubles first (hi may round up to 2^63, which no int64 holds: hence >=, not >).
  if (d < static_cast<double>(lo) || d > static_cast<double>(hi) ||
      (!v->is_number_integer() && d >= 9223372036854775808.0))
    throw_bad_request(std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]",
                      key);
  return v->is_number_integer() ? v->get<int64_t>() : static_cast<int64_t>(d);
}

std::string require_string(const Json& o, const char* key) {
  auto s = opt_string(o, key);
  if (!s) throw_bad_request(std::string("missing required field '") + key + "'", key);
  return *s;
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string random_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kHex[rng() & 15];
  return id;
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace ft::server
