// Run-time choice of the instruction-set level: CPUID through __builtin_cpu_supports, FT_CPU_ISA override.
#include "backend/cpu/isa.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "core/log.h"

namespace ft::cpu {
namespace {

IsaLevel detect() {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  const bool bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
  if (bf16) return IsaLevel::kAvx512Bf16;
  if (avx512) return IsaLevel::kAvx512;
  if (avx2) return IsaLevel::kAvx2;
  return IsaLevel::kScalar;
}

IsaLevel initial_level() {
  const IsaLevel best = detected_isa_level();
  const char* env = std::getenv("FT_CPU_ISA");
  if (env == nullptr || *env == '\0') return best;
  auto wanted = isa_level_from_name(env);
  if (!wanted.ok()) {
    FT_LOG(kWarn) << "FT_CPU_ISA: " << wanted.status().message() << "; using " << isa_level_name(best);
    return best;
  }
  if (*wanted > best) {
    FT_LOG(kWarn) << "FT_CPU_ISA=" << env << " is not supported here; using " << isa_level_name(best);
    return best;
  }
  return *wanted;
}

std::atomic<IsaLevel>& active() {
  static std::atomic<IsaLevel> level{initial_level()};
  return level;
}

}  // namespace

const char* isa_level_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::kScalar: return "scalar";
    case IsaLevel::kAvx2: return "avx2";
    case IsaLevel::kAvx512: return "avx512";
    case IsaLevel::kAvx512Bf16: return "avx512bf16";
  }
  return "?";
}

Result<IsaLevel> isa_level_from_name(std::string_view name) {
  for (IsaLevel l : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512, IsaLevel::kAvx512Bf16})
    if (name == isa_level_name(l)) return l;
  return invalid_argument("unknown CPU ISA level '" + std::string(name) +
                          "' (scalar, avx2, avx512, avx512bf16)");
}

IsaLevel detected_isa_level() {
  static const IsaLevel level = detect();
  return level;
}

IsaLevel isa_level() { return active().load(std::memory_order_relaxed); }

Status set_isa_level(IsaLevel level) {
  if (level > detected_isa_level())
    return unsupported(std::string("CPU ISA level ") + isa_level_name(level) + " is not supported by this machine");
  active().store(level, std::memory_order_relaxed);
  return ok_status();
}

}  // namespace ft::cpu
