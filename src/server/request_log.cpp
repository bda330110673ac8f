// RequestLog implementation.
#include "server/request_log.h"

#include <algorithm>

namespace ft::server {

uint64_t RequestLog::begin(RequestRecord r) {
  std::lock_guard<std::mutex> lock(mutex_);
  r.seq = next_seq_++;
  ring_.push_back(std::move(r));
  if (ring_.size() > kCapacity) ring_.pop_front();
  return ring_.back().seq;
}

void RequestLog::end(uint64_t seq, const RequestRecord& final_state) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = ring_.rbegin(); it != ring_.rend(); ++it)
    if (it->seq == seq) {
      *it = final_state;
      it->seq = seq;
      return;
    }
}

nlohmann::ordered_json RequestLog::list(uint64_t since, size_t limit) const {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  size_t first = ring_.size();
  size_t n = 0;
  while (first > 0 && ring_[first - 1].seq > since && n < limit) {
    --first;
    ++n;
  }
  for (size_t i = first; i < ring_.size(); ++i) {
    const auto& r = ring_[i];
    out.push_back({{"seq", r.seq},
                   {"endpoint", r.endpoint},
                   {"model", r.model},
                   {"stream", r.stream},
                   {"state", r.state},
                   {"n", r.n_choices},
                   {"prompt_tokens", r.prompt_tokens},
                   {"completion_tokens", r.completion_tokens},
                   {"finish_reason", r.finish_reason},
                   {"error", r.error},
                   {"started_unix_ms", r.started_unix_ms},
                   {"ttft_ms", r.ttft_ms},
                   {"latency_ms", r.latency_ms}});
  }
  return out;
}

}  // namespace ft::server
