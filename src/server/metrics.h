// Metrics: server counters and histograms-as-sums, rendered in the Prometheus text format.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "freetoken/engine.h"

namespace ft::server {

class Metrics {
 public:
  // One HTTP response (any route, any status).
  void count_response(const std::string& path, int status);
  // One finished generation.
  void count_generation(int32_t prompt_tokens, int32_t completion_tokens, double seconds, double ttft_seconds);

  // The text of GET /metrics; `engine` is null while loading.
  std::string prometheus(const EngineStats* engine, bool ready, int active_streams) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, int64_t> responses_;
  int64_t generations_ = 0;
  int64_t prompt_tokens_ = 0;
  int64_t completion_tokens_ = 0;
  double latency_sum_ = 0;
  double ttft_sum_ = 0;
  int64_t ttft_count_ = 0;
};

}  // namespace ft::server
