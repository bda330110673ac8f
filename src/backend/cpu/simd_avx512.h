// AVX-512 SIMD traits for kernels_body.h (16 floats per vector), shared by the AVX-512 and AVX-512-BF16 tables.
#pragma once

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wuninitialized reports after inlining.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstdint>

namespace ft::cpu {
namespace {

template <class S>
typename S::V exp_poly(typename S::V r);

struct Avx512Base {
  using V = __m512;
  static constexpr int kW = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float f) { return _mm512_set1_ps(f); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load(const uint16_t* p) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  // expf as Cephes: x = n ln2 + r, |r| <= ln2 / 2, degree-6 polynomial, times 2^n by vscalefps (about 1 ulp;
  // overflow to infinity, underflow to zero). x is clamped to [-104, 89] first; NaN passes through.
  static V exp(V x) {
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), _mm512_min_ps(_mm512_set1_ps(89.0f), x));
    const V n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    V r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    return _mm512_scalef_ps(exp_poly<Avx512Base>(r), n);
  }
  // An MXFP4 group as its even elements (the low nibbles), then its odd ones (the high): each code's scaled value
  // looked up by vpermps in a 16-entry table times the scale, whose index bits are the nibble (the low nibble needs no
  // mask), and x permuted to match, once for every weight row of a tile.
  static void mxfp4_x(const float* x, V* out) {
    const __m512 a = _mm512_loadu_ps(x), b = _mm512_loadu_ps(x + 16);
    out[0] = _mm512_permutex2var_ps(a, _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), b);
    out[1] = _mm512_permutex2var_ps(a, _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31), b);
  }
  static void mxfp4_weights(const uint8_t* codes, float scale, V* out) {
    const __m512 value = _mm512_setr_ps(0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6);
    const __m512 table = _mm512_mul_ps(value, _mm512_set1_ps(scale));
    const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes)));
    out[0] = _mm512_permutexvar_ps(bytes, table);
    out[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), table);
  }
  static float sum(V v) { return _mm512_reduce_add_ps(v); }
};

}  // namespace
}  // namespace ft::cpu
