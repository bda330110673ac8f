// Route plumbing.
#include "server/http_util.h"

namespace ft::server {

Json parse_body(const httplib::Request& req, size_t max_bytes) {
  if (req.body.size() > max_bytes)
    throw_error(413, "the request body is larger than " + std::to_string(max_bytes) + " bytes");
  if (req.body.empty()) throw_bad_request("the request body is empty; a JSON object is expected");
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded()) throw_bad_request("the request body is not valid JSON");
  if (!body.is_object()) throw_bad_request("the request body must be a JSON object");
  return body;
}

void send_json(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

void send_error(httplib::Response& res, Protocol protocol, const ApiError& error) {
  send_json(res, error.http_status, error_body(protocol, error));
  if (error.http_status == 503) res.set_header("Retry-After", "1");
}

void guarded(Protocol protocol, httplib::Response& res, const std::function<void()>& handler) {
  try {
    handler();
  } catch (const RequestError& e) {
    send_error(res, protocol, e.error());
  } catch (const nlohmann::json::exception& e) {
    send_error(res, protocol, {400, std::string("invalid request: ") + e.what(), "", ""});
  } catch (const std::exception& e) {
    send_error(res, protocol, {500, std::string("internal error: ") + e.what(), "", ""});
  }
}

bool SseWriter::write(const std::string& text) {
  if (ok_) ok_ = sink_.write(text.data(), text.size());
  return ok_;
}

void respond_later(httplib::Response& res, const char* content_type, std::function<void(SseWriter&)> produce) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  auto fn = std::make_shared<std::function<void(SseWriter&)>>(std::move(produce));
  res.set_chunked_content_provider(content_type, [fn](size_t, httplib::DataSink& sink) {
    SseWriter w(sink);
    try {
      (*fn)(w);
    } catch (const std::exception&) {
      return false;  // drops the connection; the Generation's destructor has aborted the request
    }
    if (!w.ok()) return false;
    sink.done();
    return true;
  });
}

}  // namespace ft::server
