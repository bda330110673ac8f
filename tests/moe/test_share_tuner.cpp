// Hybrid's online share tuning against synthetic step-time curves: it must end near the fastest share and, once it
// has climbed there, average within 10% of the better of pure offload (share 1) and pure CPU (share 0) however
// costly its periodic explorations are.
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "moe/share_tuner.h"

namespace ft {
namespace {

struct Outcome {
  double final_share;
  double mean_ms;  // over the second half of the run (after the climb from the initial share)
};

Outcome simulate(double initial, const std::function<double(double)>& step_ms, int steps = 4000, double noise = 0.02) {
  ShareTuner tuner(initial);
  std::mt19937 rng(3);
  std::normal_distribution<double> jitter(1.0, noise);
  double total = 0;
  for (int i = 0; i < steps; ++i) {
    const double ms = step_ms(tuner.share()) * jitter(rng);
    if (i >= steps / 2) total += ms;
    tuner.observe(ms);
  }
  return {tuner.settled_share(), total / (steps - steps / 2)};
}

// Fetching and CPU compute overlap: a step takes the longer of the two plus fixed device work.
double overlapped(double share, double pcie_ms, double cpu_ms) { return 2.0 + std::max(share * pcie_ms, (1 - share) * cpu_ms); }

TEST(ShareTuner, FindsTheBalancedShare) {
  auto curve = [](double s) { return overlapped(s, 20, 20); };  // best at 0.5: 12 ms
  const Outcome r = simulate(0.9, curve);
  EXPECT_NEAR(r.final_share, 0.5, 0.13);
  EXPECT_LT(r.mean_ms, 1.1 * curve(0.5));
}

TEST(ShareTuner, FallsBackToOffloadWhenTheCpuIsSlow) {
  auto curve = [](double s) { return overlapped(s, 10, 400) + (s < 1 ? 3.0 : 0.0); };  // any CPU share costs a sync
  const Outcome r = simulate(0.5, curve);
  EXPECT_EQ(r.final_share, 1.0);
  EXPECT_LT(r.mean_ms, 1.1 * std::min(curve(0), curve(1)));
}

TEST(ShareTuner, FallsBackToCpuWhenPcieIsSlow) {
  auto curve = [](double s) { return overlapped(s, 400, 10) + (s > 0 ? 3.0 : 0.0); };
  const Outcome r = simulate(0.5, curve);
  EXPECT_EQ(r.final_share, 0.0);
  EXPECT_LT(r.mean_ms, 1.1 * std::min(curve(0), curve(1)));
}

// The first windows measure the initial share, then offload (1) and cpu (0): after three windows the tuner stands
// on the best of them, whatever the initial share, and only then climbs.
TEST(ShareTuner, SettlesOnTheBetterExtremeAfterThreeWindows) {
  struct Case {
    double initial, pcie_ms, cpu_ms, want;
  };
  for (const Case& c : {Case{0.5, 400, 10, 0.0}, Case{0.5, 10, 400, 1.0}, Case{0.25, 10, 400, 1.0},
                        Case{1.0, 400, 10, 0.0}, Case{0.0, 10, 400, 1.0}}) {
    ShareTuner t(c.initial, /*window=*/4);
    std::vector<double> window_shares;
    for (int w = 0; w < 3; ++w) {
      window_shares.push_back(t.share());
      for (int i = 0; i < 4; ++i) t.observe(overlapped(t.share(), c.pcie_ms, c.cpu_ms));
    }
    EXPECT_EQ(window_shares[0], c.initial);
    EXPECT_EQ(window_shares[1], c.initial == 1.0 ? 0.0 : 1.0);  // the extremes, the initial one skipped
    EXPECT_EQ(t.settled_share(), c.want) << "initial " << c.initial;
  }
}

TEST(ShareTuner, IgnoresBadTimes) {
  ShareTuner t(0.25);
  EXPECT_FALSE(t.observe(NAN));
  EXPECT_FALSE(t.observe(-1));
  EXPECT_EQ(t.share(), 0.25);
}

}  // namespace
}  // namespace ft
