// The AVX-512-BF16 kernel table. Activations are f32 on the CPU and the matmul must not round x to bf16
// (a float32 forward has to match float64 transformers to 1e-5), so vdpbf16ps is not used: the dot products
// are the AVX-512 ones (bf16 weights widened exactly by a shift, fp32 FMA). What this level adds is
// vcvtneps2bf16 for f32 -> bf16 narrowing (convert, kv_store into a bf16 cache): round to nearest even in
// one instruction. Unlike the scalar rounding it treats f32 denormal inputs as zero (DAZ); values that small
// do not occur in activations.
#include "backend/cpu/simd_avx512.h"

#include <cstring>

#include "backend/cpu/kernels_body.h"

namespace ft::cpu {
namespace {

struct Avx512Bf16 : Avx512Base {
  static constexpr bool kHasBf16Store = true;
  static void store_bf16(uint16_t* p, V v) {
    const __m256bh h = _mm512_cvtneps_pbh(v);
    std::memcpy(p, &h, sizeof(h));
  }
};

}  // namespace

const CpuKernels& avx512bf16_kernels() {
  static const CpuKernels k = make_kernels<Avx512Bf16>();
  return k;
}

}  // namespace ft::cpu
