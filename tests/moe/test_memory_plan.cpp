// The memory plan with routed experts in host memory: weights, workspace and state first, then a runtime
// reserve, the KV floor, the expert cache (as asked, or what the budget leaves), then KV; expected figures are
// worked out here from the rule, byte by byte.
#include <gtest/gtest.h>

#include "engine/memory_plan.h"

namespace ft {
namespace {

constexpr uint64_t kGiB = 1ull << 30, kMiB = 1ull << 20;

// Qwen3-30B-A3B's 16-layer bench shape at an 8 GB budget: 2048 experts of 9.44 MB, 1 MiB KV pages.
MemoryPlanInput bench_input() {
  MemoryPlanInput in;
  in.device = {DeviceType::kCuda, 0};
  in.budget = 8 * kGiB;
  in.weights = 1858 * kMiB;
  in.workspace = 12 * kMiB;
  in.page_bytes = kMiB;
  in.page_size = 16;
  in.min_pages = 64;
  in.expert_slot_bytes = 9437184 + 12;
  in.expert_cache_fixed = 5 * kMiB;
  in.expert_keys = 2048;
  in.min_expert_slots = 8;
  in.kv_reserve_pages = 512;  // 8192 tokens
  return in;
}

TEST(MemoryPlan, ExpertCacheTakesWhatTheKvFloorLeaves) {
  const MemoryPlanInput in = bench_input();
  auto p = plan_memory(in);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  const uint64_t floor = in.weights + in.workspace + kRuntimeReserveBytes + in.expert_cache_fixed + 512 * kMiB;
  const int64_t slots = static_cast<int64_t>((in.budget - floor) / in.expert_slot_bytes);
  EXPECT_EQ(p->expert_slots, slots);
  EXPECT_EQ(p->expert_cache_bytes, static_cast<uint64_t>(slots) * in.expert_slot_bytes + in.expert_cache_fixed);
  const uint64_t used = in.weights + in.workspace + kRuntimeReserveBytes + p->expert_cache_bytes;
  EXPECT_EQ(p->kv_pages, static_cast<int64_t>((in.budget - used) / kMiB));  // the floor and the slots' leftovers
  EXPECT_GE(p->kv_pages, 512);
  EXPECT_LE(used + p->kv_bytes, in.budget);
  EXPECT_NE(p->describe().find("expert cache"), std::string::npos);
}

TEST(MemoryPlan, ExpertCacheSizeAndRateAreHonoured) {
  MemoryPlanInput in = bench_input();
  in.expert_slots = 300;
  auto p = plan_memory(in);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->expert_slots, 300);
  in.expert_slots = 0;
  in.expert_rate = 0.1;
  p = plan_memory(in);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->expert_slots, 205);  // ceil(0.1 * 2048)
  in.expert_rate = 0;
  in.budget = 64 * kGiB;  // room for every expert: never more slots than experts
  p = plan_memory(in);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->expert_slots, 2048);
}

TEST(MemoryPlan, TooSmallABudgetNamesTheFlag) {
  MemoryPlanInput in = bench_input();
  in.budget = 2 * kGiB + 450 * kMiB;  // 2498 MiB: the weights, reserve and KV floor (2483 MiB) leave 1 slot of 8
  auto p = plan_memory(in);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kOutOfMemory);
  EXPECT_NE(p.status().message().find("--memory-budget"), std::string::npos) << p.status().message();
}

TEST(MemoryPlan, ExplicitKvLeavesTheRestToTheCache) {
  MemoryPlanInput in = bench_input();
  in.num_pages = 100;
  auto p = plan_memory(in);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->kv_pages, 100);
  const uint64_t fixed = in.weights + in.workspace + 100 * kMiB + kRuntimeReserveBytes + in.expert_cache_fixed;
  EXPECT_EQ(p->expert_slots, static_cast<int64_t>((in.budget - fixed) / in.expert_slot_bytes));
}

TEST(MemoryPlan, WithoutExpertsKvTakesTheBudget) {
  MemoryPlanInput in = bench_input();
  in.expert_slot_bytes = 0;
  auto p = plan_memory(in);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->expert_slots, 0);
  EXPECT_EQ(p->kv_pages, static_cast<int64_t>((in.budget - in.weights - in.workspace - kRuntimeReserveBytes) / kMiB));
}

}  // namespace
}  // namespace ft
