// ThreadPool: workers spin briefly on a generation counter, then sleep on a condition variable.
#include "core/thread_pool.h"

#include <algorithm>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include "core/check.h"

namespace ft {

namespace {

// The process's allowed cores, highest first (empty where the affinity cannot be read).
std::vector<int> allowed_cores() {
  std::vector<int> cores;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cores;
  for (int c = CPU_SETSIZE - 1; c >= 0; --c)
    if (CPU_ISSET(c, &set)) cores.push_back(c);
#endif
  return cores;
}

void pin_to(std::thread& t, int core) {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(t.native_handle(), sizeof set, &set);  // best effort: an unpinned worker still works
#else
  (void)t, (void)core;
#endif
}

}  // namespace

int hardware_threads() {
  const size_t allowed = allowed_cores().size();  // a container's cpuset or taskset, not the machine's cores
  return allowed > 0 ? static_cast<int>(allowed) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

ThreadPool::ThreadPool(int n_threads, bool pin) {
  if (n_threads <= 0) n_threads = hardware_threads();
  const std::vector<int> cores = pin ? allowed_cores() : std::vector<int>{};
  for (int i = 1; i < n_threads; ++i) {
    workers_.emplace_back([this, i] { worker_loop(i); });
    // One worker per core: workers past the cores' count stay unpinned, for the scheduler to place.
    if (static_cast<size_t>(i - 1) < cores.size()) pin_to(workers_.back(), cores[static_cast<size_t>(i - 1)]);
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_share(int index) {
  const int64_t n_chunks = (job_n_ + job_grain_ - 1) / job_grain_;
  const int64_t per = n_chunks / n_threads();
  const int64_t extra = n_chunks % n_threads();
  const int64_t c0 = index * per + std::min<int64_t>(index, extra);
  const int64_t c1 = c0 + per + (index < extra ? 1 : 0);
  const int64_t begin = std::min(job_n_, c0 * job_grain_);
  const int64_t end = std::min(job_n_, c1 * job_grain_);
  if (begin < end) (*job_)(index, begin, end);
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    // Spin for a short while: decode steps issue many small loops back to back.
    for (int spin = 0; spin < 20000 && generation_.load(std::memory_order_acquire) == seen; ++spin) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      if (stop_) return;
      seen = generation_.load();
    }
    run_share(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int, int64_t, int64_t)>& fn,
                              int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (workers_.empty() || n <= grain) {
    fn(0, 0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_grain_ = grain;
    pending_.store(static_cast<int>(workers_.size()));
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  run_share(0);
  while (pending_.load(std::memory_order_acquire) != 0) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  job_ = nullptr;
}

}  // namespace ft
