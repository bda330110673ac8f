// The AVX-512 (F/BW/VL/DQ) kernel table: 16 floats per vector; f32 -> bf16 rounded to nearest even in integers.
#include "backend/cpu/simd_avx512.h"

#include "backend/cpu/kernels_body.h"

namespace ft::cpu {
namespace {

struct Avx512 : Avx512Base {
  static constexpr bool kHasBf16Store = true;
  static void store_bf16(uint16_t* p, V v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(r));
  }
};

}  // namespace

const CpuKernels& avx512_kernels() {
  static const CpuKernels k = make_kernels<Avx512>();
  return k;
}

}  // namespace ft::cpu
