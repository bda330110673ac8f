// The FreeToken engine API: submit a request, read its token events, abort it, read statistics.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "freetoken/status.h"

namespace ft {

inline constexpr int32_t kMaxChoices = 16;   // GenerateRequest::n
inline constexpr int32_t kMaxLogprobs = 20;  // SamplingParams::logprobs

struct SamplingParams {
  float temperature = 1.0f;        // <= 0: greedy
  int32_t top_k = 0;               // 0: off
  float top_p = 1.0f;              // 1: off
  float min_p = 0.0f;              // 0: off
  float repetition_penalty = 1.0f; // over prompt and output tokens (HF semantics)
  float presence_penalty = 0.0f;   // over output tokens (OpenAI semantics)
  float frequency_penalty = 0.0f;  // over output tokens (OpenAI semantics)
  std::optional<uint64_t> seed;    // same seed and prompt: same output, whatever else runs
  int32_t logprobs = -1;           // -1: none; n >= 0: the chosen token's logprob and the n most likely
};

struct GenerateRequest {
  std::vector<int32_t> prompt;
  int32_t max_tokens = 16;
  SamplingParams sampling;
  std::vector<int32_t> stop_token_ids;  // besides the model's EOS ids
  bool ignore_eos = false;
  int32_t n = 1;                        // choices; they share the prompt's KV pages
};

enum class FinishReason { kNone, kStop, kLength, kAborted, kError };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "abort", "error"

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;  // over all choices
};

// One event of a request's stream: a new token of one choice, or the end of a choice.
struct TokenEvent {
  int32_t choice = 0;
  bool has_token = false;
  int32_t token = 0;
  float logprob = 0.0f;                  // with SamplingParams::logprobs >= 0
  std::vector<TokenLogprob> top;         // the most likely alternatives
  FinishReason finish = FinishReason::kNone;  // set on a choice's last event
  bool stopped_by_token = false;         // finish kStop because of an EOS / stop token (which is then the token)
  Status error;                          // with kError
  Usage usage;                           // running totals
  int64_t emitted_ns = 0;                // when the engine emitted a token event: std::chrono::steady_clock, ns
};

struct EngineStats {
  int32_t running = 0;
  int32_t queued = 0;
  int32_t kv_pages_total = 0;
  int32_t kv_pages_used = 0;
  int32_t state_slots_used = 0;  // recurrent-state slots held (models with linear attention)
  int64_t prompt_tokens = 0;     // processed since start
  int64_t generated_tokens = 0;  // since start
  int64_t preemptions = 0;
  double decode_tokens_per_s = 0;  // recent
  double prefill_tokens_per_s = 0; // recent
  // Routed experts in host memory (--moe-backend offload, cpu, hybrid): per MoE layer, distinct experts per step
  // that hit the device cache, were fetched over PCIe, were computed on the CPU, and the milliseconds spent in
  // host -> device copies and in the CPU's expert jobs (both overlap other work); refreshed every few steps.
  std::string moe_backend = "fused";
  int64_t expert_slots = 0;
  int64_t expert_keys = 0;
  double fetch_share = 1.0;  // hybrid: the tuned share of misses fetched
  struct ExpertLayer {
    int64_t hits = 0, fetched = 0, cpu = 0;
    double copy_ms = 0, cpu_ms = 0;
  };
  std::vector<ExpertLayer> expert_layers;
  ExpertLayer expert_totals() const {  // every layer's counts and times summed
    ExpertLayer t;
    for (const ExpertLayer& l : expert_layers) {
      t.hits += l.hits, t.fetched += l.fetched, t.cpu += l.cpu;
      t.copy_ms += l.copy_ms, t.cpu_ms += l.cpu_ms;
    }
    return t;
  }
  double step_seconds = 0;  // wall time of every engine step so far (what the copy and CPU times compare with)
  uint64_t expert_bytes_fetched = 0;  // host -> device, misses and streamed prefill chunks
  uint64_t device_bytes_in_use = 0;   // device memory the engine holds after warm-up, measured (0: not yet)
};

// The receiving end of one request. next() blocks until an event or the end of the stream.
class RequestStream {
 public:
  virtual ~RequestStream() = default;
  virtual uint64_t id() const = 0;
  // False once every choice has finished and all events were read.
  virtual bool next(TokenEvent& event) = 0;
  // Like next() with a timeout; false on timeout too (then `timed_out` is set).
  virtual bool next_for(TokenEvent& event, int64_t timeout_ms, bool& timed_out) = 0;
};

struct EngineOptions {
  std::string model_dir;
  std::string device = "cpu";
  std::string dtype = "f32";
  int n_threads = 0;
  int32_t max_running_requests = 4;
  int32_t max_prefill_length = 8192;  // tokens of prefill per step (a chunk size, not a prompt limit)
  int32_t page_size = 16;
  int32_t context_length = 0;         // tokens per sequence; 0: the model's max_position_embeddings
  uint64_t memory_budget = 0;         // bytes the engine may use; 0: memory_ratio of free memory
  double memory_ratio = 0.9;
  int64_t num_pages = 0;              // KV pages, overriding the budget
  int64_t num_tokens = 0;             // KV tokens, overriding the budget
  bool show_progress = true;
  bool cuda_graph = true;             // decode-only steps on a device backend replay captured graphs
  std::string moe_backend = "fused";  // fused, offload, cpu, hybrid or auto (see docs/cli.md)
  int64_t moe_cache_size = 0;         // expert cache slots; 0: from moe_cache_rate, else the budget
  double moe_cache_rate = 0;          // expert cache as a fraction of all experts; 0: unset
  int64_t kv_reserve_tokens = 8192;   // KV floor kept before the expert cache takes the rest of the budget
  std::string bw_profile;             // bandwidth profile for auto ("": ~/.cache/freetoken/bw_profile.json)
  int moe_cpu_threads = 0;            // CPU threads for missed experts (cpu, hybrid); 0: all cores but two
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> create(const EngineOptions& options);
  virtual ~Engine() = default;
  // Validates and queues the request. kInvalidRequest for a malformed one (e.g. a prompt longer than the context).
  virtual Result<std::shared_ptr<RequestStream>> submit(GenerateRequest request) = 0;
  // Aborts in any state; everything it held is freed by the next step. Unknown ids are ignored.
  virtual void abort(uint64_t id) = 0;
  // Ends one choice of a request with kStop (e.g. its text matched a stop string) and frees what it held;
  // the other choices run on. Unknown ids and choices are ignored.
  virtual void stop_choice(uint64_t id, int32_t choice) = 0;
  virtual EngineStats stats() const = 0;
  // The memory plan, as printed at start.
  virtual std::string plan() const = 0;
  virtual int32_t context_length() const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual std::vector<int32_t> eos_token_ids() const = 0;
  // Stops the engine thread; running requests end with kAborted.
  virtual void shutdown() = 0;
};

}  // namespace ft
