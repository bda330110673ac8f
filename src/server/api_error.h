// ApiError: an HTTP status plus a message, written in the OpenAI or the Anthropic error shape.
#pragma once

#include <exception>
#include <string>

#include "freetoken/status.h"

namespace ft::server {

enum class Protocol { kOpenAI, kAnthropic };

// The protocol a path belongs to: /v1/messages... is Anthropic, everything else OpenAI.
Protocol protocol_of_path(const std::string& path);

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string param;  // OpenAI's `param` ("" -> null)
  std::string code;   // OpenAI's `code` ("" -> null)
};

// Thrown while a request is parsed; the route wrapper turns it into the protocol's error response.
class RequestError : public std::exception {
 public:
  explicit RequestError(ApiError error) : error_(std::move(error)) {}
  const ApiError& error() const { return error_; }
  const char* what() const noexcept override { return error_.message.c_str(); }

 private:
  ApiError error_;
};

[[noreturn]] void throw_bad_request(std::string message, std::string param = "");
[[noreturn]] void throw_error(int http_status, std::string message);

// A Status from the engine or tokenizer as an HTTP error: invalid requests are 400, a stopping engine 503.
ApiError error_from_status(const Status& status);

// OpenAI: {"error":{"message","type","param","code"}}; Anthropic: {"type":"error","error":{"type","message"}}.
std::string error_body(Protocol protocol, const ApiError& error);
// The error object alone, for an error event inside a stream.
std::string openai_error_type(int http_status);
std::string anthropic_error_type(int http_status);

}  // namespace ft::server
