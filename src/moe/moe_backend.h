// Where routed experts are computed: the --moe-strategy choices and the automatic pick from a bandwidth profile.
#pragma once

#include <string>
#include <string_view>

#include "freetoken/status.h"

namespace ft {

enum class MoeBackend {
  kFused,    // every expert resident on the device
  kOffload,  // a device cache of slots; misses copied from host memory over PCIe
  kCpu,      // a device cache of slots; misses computed on the CPU from host memory
  kHybrid,   // per layer, a share of the misses copied, the rest computed on the CPU at the same time
  kAuto,     // one of the above, from the bandwidth profile of `ft bench bw`
};

Result<MoeBackend> moe_backend_from_name(std::string_view name);
const char* moe_backend_name(MoeBackend b);

// What `ft bench bw` measures on this machine, in GB/s (1e9 bytes per second).
struct BandwidthProfile {
  double h2d_copy = 0;    // pinned host -> device through the copy engine
  double h2d_kernel = 0;  // pinned host -> device read by the cache-fill kernel
  double cpu_experts = 0; // expert weights streamed by the CPU expert kernels (decode, all threads)
  double device = 0;      // device memory read by the device expert kernels
  int cpu_threads = 0;
  std::string device_name;
};

std::string default_profile_path();  // $XDG_CACHE_HOME or ~/.cache, then freetoken/bw_profile.json
Status save_profile(const BandwidthProfile& p, const std::string& path);
Result<BandwidthProfile> load_profile(const std::string& path);

// The share of missed experts hybrid fetches over PCIe so that fetching and CPU compute end together.
double balanced_fetch_share(const BandwidthProfile& p);
// auto: offload when fetching is at least 4x faster than computing on the CPU, cpu when the CPU is 4x faster,
// hybrid between (with the balanced share); offload without a profile.
MoeBackend pick_moe_backend(const BandwidthProfile* profile);

}  // namespace ft
