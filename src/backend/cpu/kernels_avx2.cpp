// The AVX2 + FMA kernel table: 8 floats per vector; bf16 widened with vpmovzxwd + vpslld.
#include <immintrin.h>

#include "backend/cpu/kernels_body.h"

namespace ft::cpu {
namespace {

struct Avx2 {
  using V = __m256;
  static constexpr int kW = 8;
  static constexpr bool kHasBf16Store = false;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float f) { return _mm256_set1_ps(f); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load(const uint16_t* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  // expf as Cephes: x = n ln2 + r, |r| <= ln2 / 2, degree-6 polynomial, 2^n built in the exponent field (about
  // 1 ulp). x is clamped to [-87.3, 88.3] so 2^n stays a normal float; NaN passes through.
  static V exp(V x) {
    x = _mm256_max_ps(_mm256_set1_ps(-87.33654f), _mm256_min_ps(_mm256_set1_ps(88.3762626f), x));
    const V n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    V r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    const V p = exp_poly<Avx2>(r);
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  }
  // An MXFP4 group in its own order. Each code's value doubled is a small integer (0, 1, 2, 3, 4, 6, 8, 12 and their
  // negatives), so one byte shuffle looks up 16 codes; the low and high nibbles are interleaved back into order.
  static void mxfp4_x(const float* x, V* out) {
    for (int i = 0; i < 4; ++i) out[i] = _mm256_loadu_ps(x + 8 * i);
  }
  static void mxfp4_weights(const uint8_t* codes, float scale, V* out) {
    const __m128i twice = _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
    const __m128i nibble = _mm_set1_epi8(0x0f);
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes));
    const __m128i low = _mm_shuffle_epi8(twice, _mm_and_si128(bytes, nibble));
    const __m128i high = _mm_shuffle_epi8(twice, _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble));
    const __m128i first = _mm_unpacklo_epi8(low, high), second = _mm_unpackhi_epi8(low, high);  // values 0-15, 16-31
    const V half_scale = _mm256_set1_ps(scale * 0.5f);
    const __m128i parts[4] = {first, _mm_srli_si128(first, 8), second, _mm_srli_si128(second, 8)};
    for (int i = 0; i < 4; ++i) out[i] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[i])), half_scale);
  }
  static float sum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace

const CpuKernels& avx2_kernels() {
  static const CpuKernels k = make_kernels<Avx2>();
  return k;
}

}  // namespace ft::cpu
