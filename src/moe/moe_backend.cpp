// MoE backend names, the bandwidth profile file (JSON) and the automatic choice.
#include "moe/moe_backend.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace ft {

Result<MoeBackend> moe_backend_from_name(std::string_view n) {
  if (n == "fused") return MoeBackend::kFused;
  if (n == "offload") return MoeBackend::kOffload;
  if (n == "cpu") return MoeBackend::kCpu;
  if (n == "hybrid") return MoeBackend::kHybrid;
  if (n == "auto") return MoeBackend::kAuto;
  return invalid_argument("MoE strategy '" + std::string(n) + "' is not fused, offload, cpu, hybrid or auto");
}

const char* moe_backend_name(MoeBackend b) {
  switch (b) {
    case MoeBackend::kFused: return "fused";
    case MoeBackend::kOffload: return "offload";
    case MoeBackend::kCpu: return "cpu";
    case MoeBackend::kHybrid: return "hybrid";
    case MoeBackend::kAuto: return "auto";
  }
  return "?";
}

std::string default_profile_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string base = xdg && *xdg ? xdg : std::string(home && *home ? home : ".") + "/.cache";
  return base + "/freetoken/bw_profile.json";
}

Status save_profile(const BandwidthProfile& p, const std::string& path) {
  const nlohmann::ordered_json j = {{"h2d_copy_gbps", p.h2d_copy},       {"h2d_kernel_gbps", p.h2d_kernel},
                                    {"cpu_experts_gbps", p.cpu_experts}, {"device_gbps", p.device},
                                    {"cpu_threads", p.cpu_threads},      {"device_name", p.device_name}};
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::ofstream out(path);
  if (!(out << j.dump(2) << "\n")) return io_error(path + ": cannot write the bandwidth profile");
  return ok_status();
}

Result<BandwidthProfile> load_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found(path + ": no bandwidth profile (run `ft bench bw`)");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  BandwidthProfile p;
  auto number = [&](const char* key, double& v) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_number() || j[key].get<double>() < 0) return false;
    v = j[key].get<double>();
    return true;
  };
  if (!number("h2d_copy_gbps", p.h2d_copy) || !number("h2d_kernel_gbps", p.h2d_kernel) ||
      !number("cpu_experts_gbps", p.cpu_experts) || !number("device_gbps", p.device))
    return corrupt_file(path + ": not a bandwidth profile (missing or negative *_gbps numbers)");
  if (j.contains("cpu_threads") && j["cpu_threads"].is_number_integer()) p.cpu_threads = j["cpu_threads"].get<int>();
  if (j.contains("device_name") && j["device_name"].is_string()) p.device_name = j["device_name"].get<std::string>();
  return p;
}

double balanced_fetch_share(const BandwidthProfile& p) {
  const double pcie = p.h2d_kernel, cpu = p.cpu_experts;
  return pcie + cpu > 0 ? pcie / (pcie + cpu) : 1.0;
}

MoeBackend pick_moe_backend(const BandwidthProfile* p) {
  if (!p) return MoeBackend::kOffload;
  if (p->h2d_kernel >= 4 * p->cpu_experts) return MoeBackend::kOffload;
  if (p->cpu_experts >= 4 * p->h2d_kernel) return MoeBackend::kCpu;
  return MoeBackend::kHybrid;
}

}  // namespace ft
