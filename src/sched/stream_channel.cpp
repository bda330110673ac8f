// StreamChannel implementation.
#include "sched/stream_channel.h"

#include <chrono>

namespace ft {

void StreamChannel::push(TokenEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (event.finish != FinishReason::kNone) --open_choices_;
    events_.push_back(std::move(event));
  }
  ready_.notify_all();
}

bool StreamChannel::pop_locked(TokenEvent& event) {
  if (events_.empty()) return false;
  event = std::move(events_.front());
  events_.pop_front();
  return true;
}

bool StreamChannel::next(TokenEvent& event) {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait(lock, [&] { return !events_.empty() || open_choices_ <= 0; });
  return pop_locked(event);
}

bool StreamChannel::next_for(TokenEvent& event, int64_t timeout_ms, bool& timed_out) {
  std::unique_lock<std::mutex> lock(mutex_);
  timed_out = !ready_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                               [&] { return !events_.empty() || open_choices_ <= 0; });
  if (timed_out) return false;
  return pop_locked(event);
}

}  // namespace ft
