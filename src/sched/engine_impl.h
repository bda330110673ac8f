// EngineImpl: the Engine behind include/freetoken/engine.h — one thread owns the device, the model and the
// scheduler; callers talk to it through an inbox and per-request StreamChannels.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/device_sampler.h"
#include "engine/graph_runner.h"
#include "engine/memory_plan.h"
#include "freetoken/engine.h"
#include "model/model.h"
#include "moe/expert_cache.h"
#include "moe/share_tuner.h"
#include "sched/scheduler.h"

namespace ft {

class EngineImpl final : public Engine {
 public:
  static Result<std::unique_ptr<Engine>> create(const EngineOptions& options);
  ~EngineImpl() override;

  Result<std::shared_ptr<RequestStream>> submit(GenerateRequest request) override;
  void abort(uint64_t id) override;
  void stop_choice(uint64_t id, int32_t choice) override;
  EngineStats stats() const override;
  std::string plan() const override { return plan_.describe(); }
  int32_t context_length() const override { return context_; }
  int64_t vocab_size() const override { return model_->config().vocab_size; }
  std::vector<int32_t> eos_token_ids() const override { return model_->config().eos_token_ids; }
  void shutdown() override;

 private:
  EngineImpl() = default;
  Status validate(const GenerateRequest& r) const;
  void loop();
  void run_step(StepPlan& plan);
  // Samples the next token of every choice an entry ends (forking n > 1 choices first).
  // `drawn`: the token already sampled on the device (no fork pending), else nullptr and `logits_row` is used.
  void sample_entry(const StepEntry& e, const float* logits_row, const SampleResult* drawn = nullptr);
  // Samples every logit row on the device when each can be (no penalties, no fork pending).
  bool sample_on_device(const StepPlan& plan);
  void emit_token(Request& r, Choice& c, const SampleResult& s);
  void update_stats(const StepPlan& plan, double seconds);
  // Expert cache counters into stats_ every few steps, and hybrid's share tuned from decode step times (not from
  // a step that `captured` a graph).
  void update_expert_stats(const StepPlan& plan, double seconds, bool captured);
  // Once, after the first generated tokens on a device: what the device holds for the engine against the plan.
  void check_memory_after_warmup();

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<ExpertCache> experts_;      // routed experts in host memory
  std::unique_ptr<ShareTuner> share_tuner_;   // hybrid
  int32_t steps_since_expert_stats_ = 0;
  double step_seconds_ = 0;  // engine thread: every step's wall time (experts in host memory)
  uint64_t device_used_at_start_ = 0;
  bool device_bytes_measured_ = false;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<GraphRunner> graphs_;  // decode-only steps as replayed graphs (device backends)
  std::unique_ptr<DeviceSampler> device_sampler_;  // device backends with a sample op
  std::vector<SamplerState*> device_states_;
  std::vector<SampleResult> device_results_;
  MemoryPlan plan_;
  int32_t context_ = 0;
  Tensor logits_;                  // [max_seqs, vocab] f32 on the device
  std::vector<float> host_logits_; // [rows, vocab]
  std::vector<float> row_copy_;

  mutable std::mutex mutex_;       // guards the inbox, aborts and stats
  std::condition_variable wake_;
  std::vector<std::unique_ptr<Request>> inbox_;
  std::vector<std::pair<uint64_t, int32_t>> abort_inbox_;  // (request, choice or -1 for all of it)
  bool stop_ = false;
  EngineStats stats_;
  std::atomic<uint64_t> next_id_{1};
  std::thread thread_;
};

}  // namespace ft
