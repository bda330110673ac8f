// ApiError bodies in each protocol's shape.
#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace ft::server {

Protocol protocol_of_path(const std::string& path) {
  return path.rfind("/v1/messages", 0) == 0 ? Protocol::kAnthropic : Protocol::kOpenAI;
}

void throw_bad_request(std::string message, std::string param) {
  throw RequestError(ApiError{400, std::move(message), std::move(param), ""});
}

void throw_error(int http_status, std::string message) {
  throw RequestError(ApiError{http_status, std::move(message), "", ""});
}

ApiError error_from_status(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidRequest:
    case StatusCode::kInvalidArgument:
    case StatusCode::kUnsupported:
    case StatusCode::kNotFound:
      return {400, status.message(), "", ""};
    case StatusCode::kAborted:
      return {503, status.message(), "", ""};
    case StatusCode::kOutOfKvPages:
    case StatusCode::kOutOfMemory:
      return {503, status.message(), "", ""};
    default:
      return {500, status.message(), "", ""};
  }
}

std::string openai_error_type(int s) {
  if (s == 401) return "authentication_error";
  if (s == 404) return "not_found_error";
  if (s == 429) return "rate_limit_error";
  if (s >= 500) return "server_error";
  return "invalid_request_error";
}

std::string anthropic_error_type(int s) {
  switch (s) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return s >= 500 ? "api_error" : "invalid_request_error";
  }
}

std::string error_body(Protocol protocol, const ApiError& e) {
  nlohmann::ordered_json j;
  if (protocol == Protocol::kAnthropic) {
    j["type"] = "error";
    j["error"] = {{"type", anthropic_error_type(e.http_status)}, {"message", e.message}};
  } else {
    j["error"] = {{"message", e.message},
                  {"type", openai_error_type(e.http_status)},
                  {"param", e.param.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(e.param)},
                  {"code", e.code.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(e.code)}};
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace ft::server
