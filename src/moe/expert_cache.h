// ExpertCache: the routed experts of offloaded MoE layers. One pool of device slots shared by every layer holds
// recently used experts (exact LRU, bookkept on the device by moe_cache_lookup so a decode step stays one CUDA
// graph); a miss is fetched from the pinned ExpertStore over PCIe (offload), computed on the CPU from the store
// (cpu), or split between the two (hybrid, the fetched share tuned online). Steps with more tokens than the slot
// path takes (prefill) stream every layer's experts in chunks through a ring of device buffers instead: the copies
// run up to a ring ahead of the compute, across layer boundaries (not past the last layer), so the copy engine
// keeps busy while attention and the dense layers compute.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "moe/expert_store.h"
#include "moe/moe_backend.h"

namespace ft {

struct ExpertCacheOptions {
  MoeBackend backend = MoeBackend::kOffload;  // offload, cpu or hybrid
  int64_t n_slots = 0;                 // device slots (>= one step's n k on the slot path)
  int64_t max_tokens = 1;              // the largest step
  int64_t n_expert_used = 1;           // k
  int64_t slot_path_max_tokens = 16;   // larger steps stream whole layers
  int64_t stream_chunk_experts = 16;   // experts per streaming buffer
  int64_t stream_buffers = 4;          // streaming buffers: how far the copies run ahead of the compute
  double fetch_share = 0.5;            // hybrid's initial share of misses fetched
  int cpu_threads = 0;                 // the CPU expert pool (0: one per core; expert_cache_options resolves it)
};

struct ExpertLayerStats {
  int64_t hits = 0, fetched = 0, cpu = 0;  // distinct experts per step
  double copy_ms = 0;  // host -> device copies: cache fills (device clock) and streamed chunks (copy engine)
  double cpu_ms = 0;   // the CPU's expert jobs (host clock)
};

class ExpertCache {
 public:
  // Pins the store for `device`, allocates slots, streaming buffers and tables, and preloads the slots with the
  // first experts of every layer (interleaved), so the cache starts warm.
  static Result<std::unique_ptr<ExpertCache>> create(Backend& device, ExpertStore& store,
                                                     const ExpertCacheOptions& options);
  ~ExpertCache();

  // Device bytes for the memory plan: per slot (its record and table entries), and the rest (streaming buffers,
  // tables, scratch; an upper bound whatever the slot count).
  static uint64_t slot_bytes(const ExpertShape& shape);
  static uint64_t fixed_bytes(const ExpertShape& shape, const ExpertCacheOptions& options);
  // out [n, d] = the experts ids/weights [n, k] route x [n, d] to, in moe layer `layer`; on `s` (the backend's
  // stream), without a host sync on the slot path. workspace: moe_workspace_bytes for n tokens.
  Status forward(Stream& s, int64_t layer, const Tensor& x, const Tensor& ids, const Tensor& weights,
                 const Tensor& out, const Tensor& workspace);

  const ExpertCacheOptions& options() const { return options_; }
  int64_t n_slots() const { return options_.n_slots; }
  // The share of misses fetched (hybrid); set between steps.
  Status set_fetch_share(double share);
  double fetch_share() const { return share_; }
  // Changes whenever the work forward() enqueues changes shape (hybrid entering or leaving share 1, where the CPU
  // path drops out): stream graphs captured before must be captured again.
  uint64_t epoch() const { return epoch_; }
  // Counters and times since creation, per MoE layer (waits for the device).
  Result<std::vector<ExpertLayerStats>> stats();
  // Bytes copied host -> device so far: the fetched records `layers` (from stats()) counts plus streamed layers.
  uint64_t bytes_fetched(const std::vector<ExpertLayerStats>& layers) const;
  // The first error a CPU job met (they run on driver threads and cannot return one).
  Status cpu_status() const;

 private:
  struct CpuJob {
    ExpertCache* cache;
    int64_t layer, n;
  };
  ExpertCache(Backend& device, ExpertStore& store, const ExpertCacheOptions& options)
      : device_(device), store_(store), options_(options) {}
  Status allocate();
  Status preload();
  Status forward_slots(Stream& s, int64_t layer, const Tensor& x, const Tensor& ids, const Tensor& weights,
                       const Tensor& out, const Tensor& workspace);
  Status forward_streamed(Stream& s, int64_t layer, const Tensor& x, const Tensor& ids, const Tensor& weights,
                          const Tensor& out, const Tensor& workspace);
  // Copies chunk `key` (chunk key % chunks per layer of moe layer key / chunks per layer) into ring buffer b on
  // side_, once the compute reading b is done.
  Status issue_chunk_copy(int64_t key, int64_t b);
  // Queues copies of the chunks after the queued ones until the ring is full.
  Status top_up_ring();
  static void run_cpu_job(void* job);
  void compute_on_cpu(int64_t layer, int64_t n);

  Backend& device_;
  ExpertStore& store_;
  ExpertCacheOptions options_;
  bool cpu_path_active() const {
    return options_.backend == MoeBackend::kCpu || (options_.backend == MoeBackend::kHybrid && share_ < 1.0);
  }

  double share_ = 1.0;
  uint64_t epoch_ = 0;
  // The device's ops as it hands them out now (a profiling backend swaps its table while it profiles).
  const OpTable& ops() const { return device_.ops(); }

  Tensor pool_;  // [n_slots, R] u8 on the device
  ExpertCacheTables tables_;
  Tensor slot_ids_;  // [slot_path_max_tokens, k] i32
  Tensor fills_;     // [1 + slot_path_max_tokens k] i32
  Tensor fill_timing_;  // [n_layers, 4] i64: per layer the fills' nanoseconds, then moe_cache_fill's scratch

  // CPU side (cpu, hybrid): host-mapped buffers the device writes and reads, each with a host and a device view.
  std::unique_ptr<Backend> cpu_;
  std::unique_ptr<Stream> side_;  // CPU jobs and streaming copies overlap the main stream here
  Tensor cpu_ids_host_, cpu_ids_dev_;  // [slot_path_max_tokens, k] i32
  Tensor x_host_, x_dev_;              // [slot_path_max_tokens, d] f32
  Tensor w_host_, w_dev_;              // [slot_path_max_tokens, k] f32
  Tensor y_host_, y_dev_;              // [slot_path_max_tokens, d] f32
  Tensor cpu_ws_;                      // host workspace of the CPU expert kernels
  std::deque<CpuJob> jobs_;            // stable addresses (graphs keep them)
  std::map<std::pair<int64_t, int64_t>, CpuJob*> job_of_;
  Status cpu_status_;
  std::vector<double> cpu_ms_;  // per MoE layer, under the CPU status mutex

  // Streaming (prefill): a ring of stream_buffers buffers of stream_chunk_experts records, filled in chunk order
  // (chunk key = layer * chunks per layer + chunk) up to the last layer's last chunk. The queue is the buffers from
  // ring_head_ on holding chunks copied (or being copied) and not yet computed.
  std::vector<Tensor> ring_;                             // [C, R] u8 on the device each
  std::vector<int64_t> ring_key_;                        // the chunk each buffer holds (or is being copied), -1
  std::vector<std::shared_ptr<StreamEvent>> ring_ready_;  // on side_: the copy into the buffer is done
  std::vector<std::unique_ptr<StreamEvent>> ring_free_;   // on the main stream: the compute reading it is done
  int64_t ring_head_ = 0, ring_queued_ = 0, next_key_ = 0;
  Tensor chunk_ids_;                                     // [max_tokens, k] i32
  Tensor chunk_out_;                                     // [max_tokens, d] f32
  uint64_t streamed_bytes_ = 0;
  struct TimedCopy {
    int64_t layer;
    std::shared_ptr<StreamEvent> start, end;
  };
  std::vector<TimedCopy> copies_;  // streamed chunk copies not yet counted in stream_ms_
  std::vector<double> stream_ms_;  // per MoE layer
  Status count_copies();           // waits for the listed copies and adds their times
};

}  // namespace ft
