// Leveled logging to stderr: FT_LOG(kInfo) << "loaded " << n << " tensors";
#pragma once

#include <sstream>

namespace ft {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();

class LogLine {
 public:
  LogLine(LogLevel level, const char* file, int line);
  ~LogLine();
  template <class T>
  LogLine& operator<<(const T& v) {
    stream_ << v;
    return *this;
  }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

}  // namespace ft

#define FT_LOG(level)                                    \
  if (::ft::LogLevel::level < ::ft::log_level()) {       \
  } else                                                 \
    ::ft::LogLine(::ft::LogLevel::level, __FILE__, __LINE__)
