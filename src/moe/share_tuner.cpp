// ShareTuner: windowed averages and hill climbing (see the header).
#include "moe/share_tuner.h"

#include <algorithm>
#include <cmath>

namespace ft {

ShareTuner::ShareTuner(double initial, int window, double step, int rest)
    : settled_(std::clamp(initial, 0.0, 1.0)), active_(settled_), window_(std::max(window, 1)), step_(step),
      rest_(rest), rest_windows_(rest) {
  for (double extreme : {1.0, 0.0})
    if (extreme != settled_) probes_.push_back(extreme);
}

bool ShareTuner::move_to(double share) {
  const bool changed = share != active_;
  active_ = share;
  return changed;
}

void ShareTuner::start_trial() {
  double trial = std::clamp(settled_ + direction_ * step_, 0.0, 1.0);
  if (trial == settled_) {
    direction_ = -direction_;
    trial = std::clamp(settled_ + direction_ * step_, 0.0, 1.0);
  }
  active_ = trial;
}

bool ShareTuner::observe(double step_ms) {
  if (!std::isfinite(step_ms) || step_ms < 0) return false;
  sum_ += step_ms;
  if (++count_ < window_) return false;
  const double avg = sum_ / count_;
  sum_ = 0;
  count_ = 0;
  const double before = active_;
  if (!have_settled_ms_ || probe_ < probes_.size()) {  // the initial share, then the extremes: keep the fastest
    if (!have_settled_ms_ || avg < settled_ms_) settled_ = active_, settled_ms_ = avg;
    if (have_settled_ms_) ++probe_;
    have_settled_ms_ = true;
    if (probe_ < probes_.size()) active_ = probes_[probe_];
    else start_trial();
    return active_ != before;
  }
  if (resting_ > 0) {  // measuring the settled share between explorations
    settled_ms_ = avg;
    if (--resting_ > 0) return false;
    start_trial();
    return active_ != before;
  }
  if (active_ == settled_) {
    settled_ms_ = avg;
    start_trial();
    return active_ != before;
  }
  if (avg < settled_ms_) {  // the trial won: move there, keep going the same way
    settled_ = active_;
    settled_ms_ = avg;
    losses_ = 0;
    rest_windows_ = rest_;
    start_trial();
  } else {
    const double lost = active_;
    direction_ = -direction_;
    start_trial();
    if (++losses_ >= 2 || active_ == lost) {  // both sides lose (or there is no other side): stay, rest
      losses_ = 0;
      resting_ = rest_windows_;
      rest_windows_ = std::min(2 * rest_windows_, 16 * rest_);  // back off while exploring keeps losing
      active_ = settled_;
    }
  }
  return active_ != before;
}

}  // namespace ft
