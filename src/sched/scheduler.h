// Scheduler: admission against KV pages and the running limit (capacity), then the token budget of one
// step (micro-batch): decode tokens first, prefill chunks with what is left. Preempts by recompute.
//
// Contract: schedule() may change request phases, allocate and free pages and recurrent-state slots, and
// finish requests that were aborted or cannot fit; it never touches the model. commit() records that a planned
// step ran. Every page and state slot a request holds is released when it finishes (reap) or is preempted; a
// sequence takes its state slot with its first tokens and keeps it across prefill chunks.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "model/forward_batch.h"
#include "sched/request.h"

namespace ft {

struct SchedulerLimits {
  int32_t max_running = 4;        // requests in prefill or decode
  int32_t max_step_tokens = 8192; // tokens per step (--max-prefill-length)
  int32_t max_seqs = 64;          // sequences per step
  int32_t page_size = 16;
  int32_t max_pages_per_seq = 0;
};

struct StepEntry {
  Request* request = nullptr;
  int32_t choice = 0;
  int32_t n_tokens = 0;
  int32_t logit_row = -1;  // >= 0: this entry ends its pending tokens, sample from that row
  uint32_t epoch = 0;      // the request's epoch when planned
};

struct StepPlan {
  ForwardBatch batch;
  std::vector<StepEntry> entries;
  int32_t n_prefill_tokens = 0;
  int32_t n_decode_tokens = 0;
  bool empty() const { return entries.empty(); }
};

class Scheduler {
 public:
  Scheduler(KvCache& kv, const SchedulerLimits& limits) : kv_(kv), pool_(kv.pool()), limits_(limits) {}

  void enqueue(std::unique_ptr<Request> request);
  // Ends the whole request (choice -1) with kAborted, or one choice with kStop, at the next schedule().
  void abort(uint64_t id, int32_t choice = -1);
  void abort_all();
  // Builds the next step into `plan` (cleared first).
  void schedule(StepPlan& plan);
  // The planned step ran: its tokens' keys and values are stored.
  void commit(const StepPlan& plan);
  // Creates choices 1..n-1 of a request whose prompt is now cached, sharing its pages and copying its
  // recurrent state (the caller gives them their samplers).
  Status fork(Request& request, Backend& backend);
  // Ends every open choice of a request with kError.
  void fail(Request& request, const Status& error) { finish_request(request, FinishReason::kError, error); }
  // Requests that finished (every choice done), with their pages released.
  std::vector<std::unique_ptr<Request>> reap();

  int32_t n_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t n_queued() const { return static_cast<int32_t>(queued_.size()); }
  int64_t n_preemptions() const { return preemptions_; }
  bool idle() const { return running_.empty() && queued_.empty(); }

 private:
  void apply_aborts();
  void schedule_decodes(StepPlan& plan, int32_t& budget);
  void schedule_prefills(StepPlan& plan, int32_t& budget);
  void admit(StepPlan& plan, int32_t& budget);
  // Adds `n` pending tokens of a choice to the batch if its pages can be reserved.
  bool add_tokens(StepPlan& plan, Request& r, Choice& c, int32_t n);
  // Frees a request's pages and requeues it (front); false when `r` is the only one running.
  bool preempt_latest(const Request* needing);
  void finish_request(Request& r, FinishReason reason, const Status& error);
  void release_pages(Request& r);
  void stop_choice(Request& r, int32_t choice);
  void drop_unrunnable(StepPlan& plan);
  // An empty plan while requests run: the latest admitted gives its pages back, or fails when alone.
  void break_stall();

  KvCache& kv_;
  PagePool& pool_;
  SchedulerLimits limits_;
  std::deque<std::unique_ptr<Request>> queued_;
  std::vector<std::unique_ptr<Request>> running_;
  std::vector<std::unique_ptr<Request>> finished_;
  std::vector<std::pair<uint64_t, int32_t>> aborts_;  // (request, choice or -1)
  uint64_t next_admit_ = 0;
  int64_t preemptions_ = 0;
};

}  // namespace ft
