// Request and Choice: the scheduler's state for one generation request and each of its sequences.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/sampler.h"
#include "kv/kv_cache.h"
#include "sched/stream_channel.h"

namespace ft {

// queued -> prefilling -> decoding -> finished; aborted from any state; a preempted request goes back to
// queued and recomputes its KV from its tokens on re-admission.
enum class RequestPhase { kQueued, kPrefilling, kDecoding, kFinished };
const char* request_phase_name(RequestPhase phase);

struct Choice {
  int32_t index = 0;
  std::vector<int32_t> tokens;  // prompt, then generated tokens
  int32_t n_generated = 0;
  SequenceKv kv;                // kv.n_tokens(): tokens whose keys and values are stored
  std::unique_ptr<SamplerState> sampler;
  FinishReason finish = FinishReason::kNone;

  bool done() const { return finish != FinishReason::kNone; }
  int32_t n_pending() const { return static_cast<int32_t>(tokens.size()) - kv.n_tokens(); }
};

struct Request {
  uint64_t id = 0;
  uint64_t admit_order = 0;  // later admissions are preempted first
  uint32_t epoch = 0;        // bumped by each preemption: step entries planned before it are void
  GenerateRequest params;
  std::vector<int32_t> stop_ids;  // EOS ids (unless ignore_eos) and the request's stop token ids
  std::shared_ptr<StreamChannel> channel;
  RequestPhase phase = RequestPhase::kQueued;
  bool forked = false;  // choices 1..n-1 exist (they are created when the prompt is in the cache)
  bool abort_requested = false;
  std::vector<Choice> choices;
  Usage usage;

  bool all_done() const {
    for (const auto& c : choices)
      if (!c.done()) return false;
    return forked || params.n == 1;
  }
};

}  // namespace ft
