// A small HTTP client for ft shell and ft ctl: JSON requests and server-sent-event streams to a server URL.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "freetoken/status.h"

namespace httplib {
class Client;
}

namespace ft::cli {

struct HttpReply {
  int status = 0;
  nlohmann::ordered_json body;  // null when the body is not JSON
  std::string text;
};

class HttpClient {
 public:
  // `base_url`: http://host:port (no path).
  HttpClient(const std::string& base_url, const std::string& api_key, int timeout_s);
  ~HttpClient();
  Result<HttpReply> get(const std::string& path);
  Result<HttpReply> post(const std::string& path, const nlohmann::ordered_json& body);
  // POSTs and calls on_event with each `data:` payload of the event stream; returns the HTTP status.
  Result<int> post_stream(const std::string& path, const nlohmann::ordered_json& body,
                          const std::function<void(const std::string& data)>& on_event);

 private:
  std::unique_ptr<httplib::Client> client_;
  std::string api_key_;
};

}  // namespace ft::cli
