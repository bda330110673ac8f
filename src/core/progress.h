// A one-line progress bar on stderr, drawn only when stderr is a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ft {

class ProgressBar {
 public:
  ProgressBar(std::string label, uint64_t total);
  ~ProgressBar();
  void update(uint64_t done);
  void finish();

 private:
  void draw(uint64_t done);
  std::string label_;
  uint64_t total_;
  bool enabled_;
  bool finished_ = false;
  int last_permille_ = -1;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace ft
