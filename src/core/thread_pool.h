// A fixed pool of worker threads for data-parallel loops; the calling thread takes part.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ft {

class ThreadPool {
 public:
  // n_threads counts the caller: n_threads == 1 runs everything inline. 0 means one per core. pin: each worker
  // is bound to one core of the process's affinity set, the highest-numbered first, while cores last (the caller
  // and any workers beyond are not bound).
  explicit ThreadPool(int n_threads = 0, bool pin = false);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(thread_index, begin, end) over [0, n) split into n_threads() contiguous ranges,
  // each a multiple of `grain` (but the last). Returns when every range is done.
  void parallel_for(int64_t n, const std::function<void(int, int64_t, int64_t)>& fn, int64_t grain = 1);

 private:
  void worker_loop(int index);
  void run_share(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;
  const std::function<void(int, int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_grain_ = 1;
};

// The cores this process may run on (its affinity set where the system has one).
int hardware_threads();

}  // namespace ft
