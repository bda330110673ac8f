// Route plumbing shared by every handler: body parsing, JSON and error responses, the exception guard,
// and responses produced by a content provider (SSE streams and waits that watch the client).
#pragma once

#include <functional>
#include <string>

#include <httplib.h>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace ft::server {

// The request body as a JSON object (ordered, so tool schemas keep their key order), or a 400; a body over
// `max_bytes` (possible with chunked transfer, which has no Content-Length for httplib to check) is a 413.
Json parse_body(const httplib::Request& req, size_t max_bytes);
void send_json(httplib::Response& res, int status, const std::string& body);
void send_error(httplib::Response& res, Protocol protocol, const ApiError& error);
// Runs a handler; RequestError, JSON errors and any other exception become the protocol's error body.
void guarded(Protocol protocol, httplib::Response& res, const std::function<void()>& handler);

// Writes server-sent events into an httplib sink; every write reports whether the client still listens.
class SseWriter {
 public:
  explicit SseWriter(httplib::DataSink& sink) : sink_(sink) {}
  bool data(const Json& j) { return write("data: " + dump(j) + "\n\n"); }
  bool event(const std::string& name, const Json& j) { return write("event: " + name + "\ndata: " + dump(j) + "\n\n"); }
  bool write(const std::string& text);
  bool alive() { return ok_ && sink_.is_writable(); }
  bool ok() const { return ok_; }

 private:
  httplib::DataSink& sink_;
  bool ok_ = true;
};

// Answers with a body produced after the handler returns, on the same HTTP thread: `produce` writes it
// (SSE events, or one JSON document written at the end) and may poll SseWriter::alive() meanwhile. The
// response is chunked; text/event-stream is never compressed.
void respond_later(httplib::Response& res, const char* content_type, std::function<void(SseWriter&)> produce);

}  // namespace ft::server
