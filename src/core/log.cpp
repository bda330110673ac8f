// Logging and FT_CHECK failure reporting.
#include "core/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "core/check.h"

namespace ft {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mutex;
const char* level_tag(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "D";
    case LogLevel::kInfo: return "I";
    case LogLevel::kWarn: return "W";
    case LogLevel::kError: return "E";
  }
  return "?";
}
}  // namespace

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }

LogLine::LogLine(LogLevel level, const char* /*file*/, int /*line*/) : level_(level) {}

LogLine::~LogLine() {
  using namespace std::chrono;
  double t = duration<double>(steady_clock::now().time_since_epoch()).count();
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "[ft %s %.3f] %s\n", level_tag(level_), t, stream_.str().c_str());
}

namespace detail {
void check_failed(const char* file, int line, const char* expr, const char* msg) {
  std::fprintf(stderr, "FT_CHECK failed at %s:%d: %s%s%s\n", file, line, expr, msg ? ": " : "",
               msg ? msg : "");
  std::fflush(stderr);
  std::abort();
}
}  // namespace detail

}  // namespace ft
