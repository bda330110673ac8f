// ProgressBar: redraws at most once per 0.1% of progress.
#include "core/progress.h"

#include <unistd.h>

#include <cstdio>

namespace ft {

ProgressBar::ProgressBar(std::string label, uint64_t total)
    : label_(std::move(label)), total_(total), enabled_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(uint64_t done) {
  if (!enabled_ || finished_) return;
  int permille = total_ ? static_cast<int>(done * 1000 / total_) : 1000;
  if (permille == last_permille_) return;
  last_permille_ = permille;
  draw(done);
}

void ProgressBar::draw(uint64_t done) {
  constexpr int kWidth = 30;
  double frac = total_ ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
  int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "\r%s [%s] %5.1f%% %.1fs", label_.c_str(), bar.c_str(), frac * 100.0, secs);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!enabled_ || finished_) return;
  draw(total_);
  std::fprintf(stderr, "\n");
  finished_ = true;
}

}  // namespace ft
