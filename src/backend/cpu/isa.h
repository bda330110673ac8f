// Instruction-set levels of the CPU backend: detection at startup, FT_CPU_ISA and set_isa_level overrides.
#pragma once

#include <string_view>

#include "freetoken/status.h"

namespace ft::cpu {

// Ordered: a level implies every level below it.
enum class IsaLevel { kScalar, kAvx2, kAvx512, kAvx512Bf16 };

const char* isa_level_name(IsaLevel level);
// "scalar", "avx2", "avx512", "avx512bf16".
Result<IsaLevel> isa_level_from_name(std::string_view name);
// The best level this machine runs (AVX2 needs FMA and F16C; AVX-512 needs F, BW, VL and DQ).
IsaLevel detected_isa_level();
// The level the ops use: FT_CPU_ISA when set (capped at the detected level), else the detected level.
IsaLevel isa_level();
// Forces a level for every later op call; refuses a level this machine cannot run. Not thread-safe
// against ops running at the same time.
Status set_isa_level(IsaLevel level);

}  // namespace ft::cpu
