// kernel_trace: a CUPTI injection library that times every kernel the process runs, inside CUDA graphs too, where
// neither `ft bench decode --profile` (an event before every op, eager) nor ncu (kernels replayed one at a time)
// shows the real step. Use:
//   CUDA_INJECTION64_PATH=build/bench/libft_kernel_trace.so FT_TRACE_LAST=N ft bench decode ...
// Copies are recorded too, as kernels named "memcpy N bytes" with grid 0. At exit it prints, over the last N records
// (default: all), per kernel name and grid: launches, total and mean duration, the mean gap from the end of the
// kernel before to the kernel's start (negative: the kernels overlapped, as programmatic dependent launches do;
// CUPTI's own cost shows there too, so time such steps with the tracer off), and the mean time the kernel added to
// the span: its end minus the latest end before it (in start order; these sum to the span), which with overlapping
// kernels says more than the duration, which counts the wait for the kernel before. FT_TRACE_OUT=FILE also writes
// every record: start and end (ns), grid x y, block x, name.
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Record {
  uint64_t start, end;
  uint32_t grid_x, grid_y, block_x;
  std::string name;
};

std::mutex g_mutex;
std::vector<Record> g_records;

// The demangled name without its parameter list and anonymous namespaces.
std::string readable(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
  std::string s = status == 0 && d ? d.get() : mangled;
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      depth += s[i] == ')' ? 1 : s[i] == '(' ? -1 : 0;
      if (depth == 0) {
        s.resize(i);
        break;
      }
    }
  }
  for (const std::string noise : {"(anonymous namespace)::", "void "}) {
    for (size_t at; (at = s.find(noise)) != std::string::npos;) s.erase(at, noise.size());
  }
  return s;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = size_t{8} << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      g_records.push_back({m->start, m->end, 0, 0, 0, "memcpy " + std::to_string(m->bytes) + " bytes"});
      continue;
    }
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    g_records.push_back({k->start, k->end, static_cast<uint32_t>(k->gridX), static_cast<uint32_t>(k->gridY),
                         static_cast<uint32_t>(k->blockX), readable(k->name)});
  }
  std::free(buffer);
}

struct Summary {
  int64_t launches = 0;
  double total_ns = 0, gap_ns = 0, added_ns = 0;
};

void report() {
  cuptiActivityFlushAll(1);
  std::lock_guard<std::mutex> lock(g_mutex);
  std::sort(g_records.begin(), g_records.end(), [](const Record& a, const Record& b) { return a.start < b.start; });
  if (const char* path = std::getenv("FT_TRACE_OUT")) {
    if (FILE* f = std::fopen(path, "w")) {
      for (const Record& r : g_records)
        std::fprintf(f, "%llu\t%llu\t%u\t%u\t%u\t%s\n", static_cast<unsigned long long>(r.start),
                     static_cast<unsigned long long>(r.end), r.grid_x, r.grid_y, r.block_x, r.name.c_str());
      std::fclose(f);
    }
  }
  const char* last_env = std::getenv("FT_TRACE_LAST");
  const size_t last = last_env ? std::strtoull(last_env, nullptr, 10) : g_records.size();
  const size_t first = g_records.size() - std::min(last, g_records.size());
  std::map<std::string, Summary> by_kernel;
  double busy_ns = 0;
  uint64_t latest_end = first < g_records.size() ? g_records[first].start : 0;
  for (size_t i = first; i < g_records.size(); ++i) {
    const Record& r = g_records[i];
    Summary& s = by_kernel[r.name + " <<<" + std::to_string(r.grid_x) + "," + std::to_string(r.grid_y) + ">>>"];
    ++s.launches;
    s.total_ns += static_cast<double>(r.end - r.start);
    busy_ns += static_cast<double>(r.end - r.start);
    if (i > first) s.gap_ns += static_cast<double>(r.start) - static_cast<double>(g_records[i - 1].end);
    s.added_ns += static_cast<double>(r.end - std::min(r.end, latest_end));  // 0 when it ends inside another
    latest_end = std::max(latest_end, r.end);
  }
  std::vector<std::pair<std::string, Summary>> rows(by_kernel.begin(), by_kernel.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.added_ns > b.second.added_ns; });
  const double span_ns =
      g_records.size() > first ? static_cast<double>(latest_end) - static_cast<double>(g_records[first].start) : 0.0;
  std::fprintf(stderr, "kernel trace: %zu kernels, %.1f us from the first start to the last end, %.1f us in kernels\n",
               g_records.size() - first, span_ns / 1e3, busy_ns / 1e3);
  std::fprintf(stderr, "  %8s %10s %9s %9s %9s  %s\n", "launches", "total us", "mean us", "gap us", "added us",
               "kernel <<<grid>>>");
  for (const auto& [name, s] : rows) {
    const double n = static_cast<double>(s.launches);
    std::fprintf(stderr, "  %8lld %10.1f %9.2f %9.2f %9.2f  %s\n", static_cast<long long>(s.launches),
                 s.total_ns / 1e3, s.total_ns / 1e3 / n, s.gap_ns / 1e3 / n, s.added_ns / 1e3 / n, name.c_str());
  }
}

}  // namespace

// Called by the CUDA driver when CUDA_INJECTION64_PATH names this library.
extern "C" int InitializeInjection() {
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "kernel trace: CUPTI activity tracing could not be enabled\n");
    return 0;
  }
  std::atexit(report);
  return 1;
}
