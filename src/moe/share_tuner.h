// ShareTuner: the fraction of missed experts that hybrid fetches over PCIe (the rest computed on the CPU), tuned
// online from measured decode step times. It averages `window` steps at one share. The first windows measure the
// initial share, then 1 (offload) and 0 (cpu), and settle on the fastest of them, so after three windows hybrid is
// no slower than the better of offload and cpu. From there it tries a neighbour `step` away and keeps it when
// faster (hill climbing over [0, 1]). After both neighbours lose it stays, and explores again after `rest` windows
// (routing and load change), backing off to 16 times that while explorations keep losing.
#pragma once

#include <cstddef>
#include <vector>

namespace ft {

class ShareTuner {
 public:
  explicit ShareTuner(double initial, int window = 16, double step = 0.125, int rest = 16);
  double share() const { return active_; }     // the share the next steps should use (maybe a trial)
  double settled_share() const { return settled_; }  // the best share found so far
  // One decode step's time; true when share() changed.
  bool observe(double step_ms);

 private:
  bool move_to(double share);
  void start_trial();

  double settled_, active_;
  std::vector<double> probes_;  // the extremes still to measure after the initial share
  size_t probe_ = 0;
  int window_;
  double step_;
  int rest_;
  double sum_ = 0;
  int count_ = 0;
  double settled_ms_ = 0;
  bool have_settled_ms_ = false;
  int direction_ = 1;
  int losses_ = 0;  // trials in a row that lost
  int resting_ = 0; // windows left before exploring again
  int rest_windows_;  // the next rest
};

}  // namespace ft
