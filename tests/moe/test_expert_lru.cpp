// The expert cache's slot bookkeeping (moe_cache_lookup) against a plain model of an LRU: random lookups of random
// batches on a small cache, after each one the device tables must equal the model's — the slot of every key, the key
// of every slot (so no slot is owned twice), the full LRU order, the fills and the per-pair slot and CPU ids, and the
// hit / fetch / CPU counters. Runs on the cpu backend, and on cuda when a GPU is present.
#include <algorithm>
#include <list>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "backend/backend.h"

namespace ft {
namespace {

// The policy of OpTable::moe_cache_lookup written plainly: a std::list in recency order, most recent first.
struct PlainLru {
  int64_t n_slots, n_keys;
  std::list<int32_t> order;            // slots, most recently used first
  std::map<int32_t, int32_t> slot_of;  // key -> slot
  std::vector<int32_t> key_of;
  int64_t stats[3] = {0, 0, 0};

  PlainLru(int64_t slots, int64_t keys) : n_slots(slots), n_keys(keys), key_of(static_cast<size_t>(slots), -1) {
    for (int32_t s = 0; s < slots; ++s) order.push_back(s);
  }
  void touch(int32_t s) {
    order.remove(s);
    order.push_front(s);
  }
  // Returns fills; writes slot and cpu ids per pair.
  std::vector<int32_t> lookup(const std::vector<int32_t>& ids, int64_t layer, int64_t n_expert, float share,
                              std::vector<int32_t>& slot_ids, std::vector<int32_t>& cpu_ids) {
    std::vector<int32_t> seen, misses;
    for (int32_t e : ids) {
      if (e < 0 || e >= n_expert) continue;
      const int32_t key = static_cast<int32_t>(layer * n_expert + e);
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      if (slot_of.count(key)) {
        touch(slot_of[key]);
        ++stats[0];
      } else {
        misses.push_back(key);
      }
    }
    const int n_miss = static_cast<int>(misses.size());
    const int n_fill = share >= 1 ? n_miss : share <= 0 ? 0 : static_cast<int>(share * n_miss + 0.5f);
    std::vector<int32_t> fills;
    for (int i = 0; i < n_fill; ++i) {
      const int32_t s = order.back();
      if (key_of[static_cast<size_t>(s)] >= 0) slot_of.erase(key_of[static_cast<size_t>(s)]);
      key_of[static_cast<size_t>(s)] = misses[static_cast<size_t>(i)];
      slot_of[misses[static_cast<size_t>(i)]] = s;
      touch(s);
      fills.push_back(s);
    }
    stats[1] += n_fill;
    stats[2] += n_miss - n_fill;
    slot_ids.clear();
    cpu_ids.clear();
    for (int32_t e : ids) {
      const bool valid = e >= 0 && e < n_expert;
      const auto it = valid ? slot_of.find(static_cast<int32_t>(layer * n_expert + e)) : slot_of.end();
      slot_ids.push_back(it == slot_of.end() ? -1 : it->second);
      cpu_ids.push_back(valid && it == slot_of.end() ? e : -1);
    }
    return fills;
  }
};

template <class T>
std::vector<T> to_host(Backend& be, const Tensor& t) {
  std::vector<T> v(static_cast<size_t>(t.numel()));
  Tensor h = Tensor::make(t.dtype, {t.numel()}, wrap_host(v.data(), v.size() * sizeof(T), nullptr));
  EXPECT_TRUE(be.copy(t.reshape({t.numel()}), h).ok());
  EXPECT_TRUE(be.stream().synchronize().ok());
  return v;
}

template <class T>
void upload(Backend& be, const std::vector<T>& v, const Tensor& t) {
  Tensor h = Tensor::make(t.dtype, {t.numel()}, wrap_host(const_cast<T*>(v.data()), v.size() * sizeof(T), nullptr));
  ASSERT_TRUE(be.copy(h, t.reshape({t.numel()})).ok());
}

void run_random_lookups(const std::string& device, uint32_t seed) {
  auto be_or = create_backend(device);
  if (!be_or.ok()) GTEST_SKIP() << device << ": " << be_or.status().to_string();
  Backend& be = **be_or;
  std::mt19937 rng(seed);
  const int64_t n_layers = 3, n_expert = 10, n_keys = n_layers * n_expert, n_slots = 12, max_n = 3, k = 4;
  ExpertCacheTables t;
  auto take = [&](DType dt, std::initializer_list<int64_t> shape) { return be.empty(dt, shape).value(); };
  t.slot_of = take(DType::kI32, {n_keys});
  t.key_of = take(DType::kI32, {n_slots});
  t.lru = take(DType::kI32, {2, n_slots + 1});
  t.mark = take(DType::kI64, {n_keys});
  t.calls = take(DType::kI64, {1});
  t.share = take(DType::kF32, {1});
  t.stats = take(DType::kI64, {n_layers, 3});
  t.miss_keys = take(DType::kI32, {max_n * k});
  upload(be, std::vector<int32_t>(static_cast<size_t>(n_keys), -1), t.slot_of);
  upload(be, std::vector<int32_t>(static_cast<size_t>(n_slots), -1), t.key_of);
  std::vector<int32_t> ring(static_cast<size_t>(2 * (n_slots + 1)));
  for (int64_t s = 0; s <= n_slots; ++s) {  // slot order, as ExpertCache initialises it: slot 0 most recent
    ring[static_cast<size_t>(s)] = static_cast<int32_t>((s + n_slots) % (n_slots + 1));          // prev
    ring[static_cast<size_t>(n_slots + 1 + s)] = static_cast<int32_t>((s + 1) % (n_slots + 1));  // next
  }
  upload(be, ring, t.lru);
  Tensor ids = take(DType::kI32, {max_n, k}), slot_ids = take(DType::kI32, {max_n, k});
  Tensor cpu_ids = take(DType::kI32, {max_n, k}), fills = take(DType::kI32, {1 + max_n * k});
  PlainLru model(n_slots, n_keys);
  for (int step = 0; step < 400; ++step) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % max_n), layer = static_cast<int64_t>(rng() % n_layers);
    const float share = step % 3 == 0 ? 1.0f : step % 3 == 1 ? 0.0f : 0.5f;
    upload(be, std::vector<float>{share}, t.share);
    std::vector<int32_t> v(static_cast<size_t>(n * k));
    for (auto& e : v) e = rng() % 16 == 0 ? -1 : static_cast<int32_t>(rng() % (n_expert / 2) + (rng() % 2) * 5);
    upload(be, v, ids.slice(0, 0, n));
    ASSERT_TRUE(be.ops().moe_cache_lookup(ids.slice(0, 0, n), t, slot_ids.slice(0, 0, n), cpu_ids.slice(0, 0, n),
                                          fills.slice(0, 0, 1 + n * k), {layer, n_expert}, be.stream())
                    .ok());
    std::vector<int32_t> want_slots, want_cpu;
    const std::vector<int32_t> want_fills = model.lookup(v, layer, n_expert, share, want_slots, want_cpu);
    const auto got_fills = to_host<int32_t>(be, fills);
    ASSERT_EQ(got_fills[0], static_cast<int32_t>(want_fills.size())) << "step " << step;
    for (size_t i = 0; i < want_fills.size(); ++i) ASSERT_EQ(got_fills[1 + i], want_fills[i]) << "step " << step;
    auto got_slots = to_host<int32_t>(be, slot_ids), got_cpu = to_host<int32_t>(be, cpu_ids);
    got_slots.resize(static_cast<size_t>(n * k));
    got_cpu.resize(static_cast<size_t>(n * k));
    EXPECT_EQ(got_slots, want_slots) << "step " << step;
    EXPECT_EQ(got_cpu, want_cpu) << "step " << step;
    // Ownership: key_of matches the model, slot_of is its inverse, no key in two slots.
    const auto key_of = to_host<int32_t>(be, t.key_of);
    const auto slot_of = to_host<int32_t>(be, t.slot_of);
    ASSERT_EQ(key_of, model.key_of) << "step " << step;
    for (int64_t key = 0; key < n_keys; ++key) {
      const auto it = model.slot_of.find(static_cast<int32_t>(key));
      ASSERT_EQ(slot_of[static_cast<size_t>(key)], it == model.slot_of.end() ? -1 : it->second) << "key " << key;
    }
    // LRU order: walk the ring from the most recent slot.
    const auto lru = to_host<int32_t>(be, t.lru);
    std::vector<int32_t> order;
    for (int32_t s = lru[static_cast<size_t>(n_slots + 1 + n_slots)]; s != n_slots && order.size() <= static_cast<size_t>(n_slots);
         s = lru[static_cast<size_t>(n_slots + 1 + s)])
      order.push_back(s);
    ASSERT_EQ(order, std::vector<int32_t>(model.order.begin(), model.order.end())) << "step " << step;
  }
  const auto stats = to_host<int64_t>(be, t.stats);
  int64_t got[3] = {0, 0, 0};
  for (int64_t l = 0; l < n_layers; ++l)
    for (int c = 0; c < 3; ++c) got[c] += stats[static_cast<size_t>(3 * l + c)];
  for (int c = 0; c < 3; ++c) EXPECT_EQ(got[c], model.stats[c]) << "counter " << c;
  EXPECT_GT(model.stats[0], 0);  // the walk exercised hits, fetches with evictions and CPU misses
  EXPECT_GT(model.stats[1], n_slots);
  EXPECT_GT(model.stats[2], 0);
}

TEST(ExpertLru, CpuMatchesPlainLru) { run_random_lookups("cpu", 1); }
TEST(ExpertLru, CudaMatchesPlainLru) { run_random_lookups("cuda", 2); }

// Bad tables and batches are refused, not run.
TEST(ExpertLru, RejectsBatchLargerThanTheSlots) {
  auto be = create_backend("cpu").value();
  ExpertCacheTables t;
  t.slot_of = be->empty(DType::kI32, {8}).value();
  t.key_of = be->empty(DType::kI32, {2}).value();
  t.lru = be->empty(DType::kI32, {2, 3}).value();
  t.mark = be->empty(DType::kI64, {8}).value();
  t.calls = be->empty(DType::kI64, {1}).value();
  t.share = be->empty(DType::kF32, {1}).value();
  t.stats = be->empty(DType::kI64, {1, 3}).value();
  t.miss_keys = be->empty(DType::kI32, {4}).value();
  Tensor ids = be->empty(DType::kI32, {1, 4}).value(), out = be->empty(DType::kI32, {1, 4}).value();
  Tensor cpu = be->empty(DType::kI32, {1, 4}).value(), fills = be->empty(DType::kI32, {5}).value();
  EXPECT_FALSE(be->ops().moe_cache_lookup(ids, t, out, cpu, fills, {0, 8}, be->stream()).ok());  // 4 pairs > 2 slots
}

}  // namespace
}  // namespace ft
