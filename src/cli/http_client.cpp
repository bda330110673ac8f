// HttpClient over cpp-httplib.
#include "cli/http_client.h"

#include <httplib.h>

namespace ft::cli {

HttpClient::HttpClient(const std::string& base_url, const std::string& api_key, int timeout_s)
    : client_(std::make_unique<httplib::Client>(base_url)), api_key_(api_key) {
  client_->set_connection_timeout(timeout_s);
  client_->set_read_timeout(timeout_s);
}

HttpClient::~HttpClient() = default;

namespace {
httplib::Headers headers(const std::string& key) {
  httplib::Headers h;
  if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
  return h;
}
HttpReply reply(const httplib::Response& r) {
  HttpReply out;
  out.status = r.status;
  out.text = r.body;
  out.body = nlohmann::ordered_json::parse(r.body, nullptr, false);
  if (out.body.is_discarded()) out.body = nullptr;
  return out;
}
}  // namespace

Result<HttpReply> HttpClient::get(const std::string& path) {
  auto r = client_->Get(path, headers(api_key_));
  if (!r) return io_error("GET " + path + ": " + httplib::to_string(r.error()));
  return reply(r.value());
}

Result<HttpReply> HttpClient::post(const std::string& path, const nlohmann::ordered_json& body) {
  auto r = client_->Post(path, headers(api_key_), body.dump(), "application/json");
  if (!r) return io_error("POST " + path + ": " + httplib::to_string(r.error()));
  return reply(r.value());
}

Result<int> HttpClient::post_stream(const std::string& path, const nlohmann::ordered_json& body,
                                    const std::function<void(const std::string&)>& on_event) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = headers(api_key_);
  req.headers.emplace("Content-Type", "application/json");
  req.body = body.dump();
  std::string buf, error_body;
  int status = 0;
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status != 200) {
      error_body.append(data, n);
      return true;
    }
    buf.append(data, n);
    for (size_t end; (end = buf.find("\n\n")) != std::string::npos; buf.erase(0, end + 2)) {
      const std::string event = buf.substr(0, end);
      size_t at = 0;
      while (at < event.size()) {
        size_t nl = event.find('\n', at);
        if (nl == std::string::npos) nl = event.size();
        if (event.compare(at, 6, "data: ") == 0) on_event(event.substr(at + 6, nl - at - 6));
        at = nl + 1;
      }
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  if (!client_->send(req, res, err)) return io_error("POST " + path + ": " + httplib::to_string(err));
  if (status != 200) {
    auto j = nlohmann::ordered_json::parse(error_body, nullptr, false);
    std::string msg = error_body;
    if (!j.is_discarded() && j.contains("error") && j["error"].contains("message")) msg = j["error"]["message"];
    return invalid_argument("HTTP " + std::to_string(status) + ": " + msg);
  }
  return status;
}

}  // namespace ft::cli
