// RequestLog: a ring of the most recent generation requests, for GET /v1/requests.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace ft::server {

struct RequestRecord {
  uint64_t seq = 0;  // server-wide order, 1, 2, ...
  std::string endpoint;
  std::string model;
  bool stream = false;
  std::string state = "running";  // running, finished, error, disconnected
  int32_t n_choices = 1;
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  std::string finish_reason;
  std::string error;
  int64_t started_unix_ms = 0;
  double ttft_ms = -1;
  double latency_ms = -1;
};

class RequestLog {
 public:
  static constexpr size_t kCapacity = 256;
  // Adds a running record and returns its seq.
  uint64_t begin(RequestRecord record);
  void end(uint64_t seq, const RequestRecord& final_state);
  // Records with seq > since, newest last, at most `limit`.
  nlohmann::ordered_json list(uint64_t since, size_t limit) const;

 private:
  mutable std::mutex mutex_;
  std::deque<RequestRecord> ring_;
  uint64_t next_seq_ = 1;
};

}  // namespace ft::server
