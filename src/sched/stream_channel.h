// StreamChannel: the queue of TokenEvents between the engine thread and one request's reader.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>

#include "freetoken/engine.h"

namespace ft {

class StreamChannel final : public RequestStream {
 public:
  StreamChannel(uint64_t id, int32_t n_choices) : id_(id), open_choices_(n_choices) {}

  uint64_t id() const override { return id_; }
  bool next(TokenEvent& event) override;
  bool next_for(TokenEvent& event, int64_t timeout_ms, bool& timed_out) override;

  // Engine side: an event; one whose finish is set closes its choice.
  void push(TokenEvent event);

 private:
  bool pop_locked(TokenEvent& event);

  const uint64_t id_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<TokenEvent> events_;
  int32_t open_choices_;
};

}  // namespace ft
