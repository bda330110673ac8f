// Picks the kernel table of the active instruction-set level.
#include "backend/cpu/kernels.h"

namespace ft::cpu {

const CpuKernels& kernels() {
  switch (isa_level()) {
    case IsaLevel::kAvx512Bf16: return avx512bf16_kernels();
    case IsaLevel::kAvx512: return avx512_kernels();
    case IsaLevel::kAvx2: return avx2_kernels();
    case IsaLevel::kScalar: break;
  }
  return scalar_kernels();
}

}  // namespace ft::cpu
