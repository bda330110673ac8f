// ThreadPool::parallel_for: every index covered exactly once, ranges aligned to the grain, thread
// indices in range, for many sizes, grains and thread counts, and many loops in a row.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>

#include "core/thread_pool.h"

#if defined(__linux__)
#include <sched.h>
#endif

namespace ft {
namespace {

TEST(ThreadPool, EveryIndexExactlyOnce) {
  for (int n_threads : {1, 2, 3, 5, 8}) {
    ThreadPool pool(n_threads);
    EXPECT_EQ(pool.n_threads(), n_threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 100, 1000, 4097}) {
      for (int64_t grain : {1, 3, 16, 1000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<int> bad_range{0};
        pool.parallel_for(
            n,
            [&](int thread, int64_t begin, int64_t end) {
              if (thread < 0 || thread >= n_threads || begin >= end || begin % grain != 0 || end > n) ++bad_range;
              for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
            },
            grain);
        int wrong = 0;
        for (auto& h : hits) wrong += h.load() != 1;
        EXPECT_EQ(wrong, 0) << "threads " << n_threads << " n " << n << " grain " << grain;
        EXPECT_EQ(bad_range.load(), 0) << "threads " << n_threads << " n " << n << " grain " << grain;
      }
    }
  }
}

TEST(ThreadPool, ManyLoopsBackToBack) {
  ThreadPool pool(4);
  std::vector<int64_t> sums(4, 0);
  int64_t total = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    std::atomic<int64_t> sum{0};
    const int64_t n = 1 + iter % 37;
    pool.parallel_for(n, [&](int, int64_t b, int64_t e) {
      int64_t s = 0;
      for (int64_t i = b; i < e; ++i) s += i;
      sum += s;
    });
    ASSERT_EQ(sum.load(), n * (n - 1) / 2) << "iteration " << iter;
    total += sum.load();
  }
  EXPECT_GT(total, 0);
}

TEST(ThreadPool, UsesEveryThreadWhenThereIsWork) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> used(4);
  pool.parallel_for(400, [&](int t, int64_t, int64_t) { used[static_cast<size_t>(t)]++; });
  for (auto& u : used) EXPECT_EQ(u.load(), 1);
}

// Pinned workers each run on one core of the process's set, the highest-numbered first (Linux; workers past the
// set's size stay unpinned), and the pool still splits work over every thread.
TEST(ThreadPool, PinnedWorkersStayOnTheirCores) {
  ThreadPool pool(3, /*pin=*/true);
  std::vector<std::atomic<int>> used(3);
  std::vector<int> core(3, -1);
  pool.parallel_for(300, [&](int t, int64_t, int64_t) {
    used[static_cast<size_t>(t)]++;
#if defined(__linux__)
    core[static_cast<size_t>(t)] = sched_getcpu();
#endif
  });
  for (auto& u : used) EXPECT_EQ(u.load(), 1);
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> allowed;
  for (int c = CPU_SETSIZE - 1; c >= 0; --c)
    if (CPU_ISSET(c, &set)) allowed.push_back(c);
  for (size_t w = 1; w < 3 && w - 1 < allowed.size(); ++w) EXPECT_EQ(core[w], allowed[w - 1]) << "worker " << w;
  EXPECT_EQ(hardware_threads(), static_cast<int>(allowed.size()));
#endif
}

TEST(ThreadPool, ConstructAndDestroyRepeatedly) {
  for (int i = 0; i < 50; ++i) {
    auto pool = std::make_unique<ThreadPool>(1 + i % 4);
    std::atomic<int> n{0};
    pool->parallel_for(10, [&](int, int64_t b, int64_t e) { n += static_cast<int>(e - b); });
    EXPECT_EQ(n.load(), 10);
  }
  EXPECT_GE(ThreadPool(0).n_threads(), 1);
}

}  // namespace
}  // namespace ft
