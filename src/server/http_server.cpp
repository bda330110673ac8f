// HttpServer: httplib wiring.
#include "server/http_server.h"

#include <httplib.h>

#include "server/http_util.h"
#include "server/routes.h"

namespace ft::server {
namespace {

bool authorized(const httplib::Request& req, const std::string& key) {
  const std::string bearer = req.get_header_value("Authorization");
  if (bearer.size() > 7 && bearer.compare(0, 7, "Bearer ") == 0 && bearer.substr(7) == key) return true;
  return req.get_header_value("x-api-key") == key;
}

std::string status_message(int status, const httplib::Request& req, size_t max_body) {
  switch (status) {
    case 404: return "not found: " + req.method + " " + req.path;
    case 405: return "method not allowed: " + req.method + " " + req.path;
    case 413: return "the request body is larger than " + std::to_string(max_body) + " bytes";
    case 414: return "the request URI is too long";
    default: return status >= 500 ? "internal server error" : "malformed HTTP request";
  }
}

}  // namespace

HttpServer::HttpServer(ServerState& state) : state_(state), http_(std::make_unique<httplib::Server>()) { setup(); }

HttpServer::~HttpServer() { stop(); }

void HttpServer::setup() {
  const ServerOptions& o = state_.options();
  const size_t n_threads = static_cast<size_t>(std::max(4, o.http_threads));
  http_->new_task_queue = [n_threads] { return new httplib::ThreadPool(n_threads); };
  http_->set_payload_max_length(o.max_body_bytes);
  http_->set_keep_alive_max_count(1000);
  http_->set_read_timeout(30);
  http_->set_write_timeout(30);
  http_->set_tcp_nodelay(true);

  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const Protocol p = protocol_of_path(req.path);
    if (!state_.options().api_key.empty() && req.path != "/health" && !authorized(req, state_.options().api_key)) {
      send_error(res, p, {401, "invalid or missing API key (send Authorization: Bearer KEY or x-api-key: KEY)", "",
                          "invalid_api_key"});
      res.set_header("Connection", "close");  // the body was not read: the connection cannot be reused
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http_->set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                       httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // a route's own error body
    send_error(res, protocol_of_path(req.path), {res.status, status_message(res.status, req, state_.options().max_body_bytes), "", ""});
    return httplib::Server::HandlerResponse::Handled;
  }));
  http_->set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
    send_error(res, protocol_of_path(req.path), {500, "internal server error", "", ""});
  });
  http_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    state_.metrics().count_response(req.path.rfind("/v1/models/", 0) == 0 ? "/v1/models/{id}" : req.path, res.status);
  });

  add_openai_chat_routes(*http_, state_);
  add_openai_completion_routes(*http_, state_);
  add_openai_responses_routes(*http_, state_);
  add_anthropic_routes(*http_, state_);
  add_control_routes(*http_, state_);
}

Status HttpServer::start() {
  const ServerOptions& o = state_.options();
  if (o.port == 0) {
    port_ = http_->bind_to_any_port(o.host);
    if (port_ <= 0) return io_error("cannot bind " + o.host + " to a free port");
  } else {
    if (!http_->bind_to_port(o.host, o.port)) return io_error("cannot bind " + o.host + ":" + std::to_string(o.port));
    port_ = o.port;
  }
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  return ok_status();
}

void HttpServer::stop() {
  if (!thread_.joinable()) return;
  state_.begin_stop();
  // Generations poll the phase every few tens of milliseconds and end their streams with an error event.
  for (int i = 0; i < 100 && state_.active_generations().load() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  http_->stop();
  thread_.join();
}

}  // namespace ft::server
