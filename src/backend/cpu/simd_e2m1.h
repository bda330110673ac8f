// MXFP4 codes decoded 16 bytes at a time for the AVX2 and AVX-512 traits (kernels_body.h's e2m1_group): each code's
// value doubled is a small integer (0, 1, 2, 3, 4, 6, 8, 12 and their negatives), so one byte shuffle looks up 16.
// Include only from files compiled for AVX2 or above.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ft::cpu {
namespace {

// A group's 16 code bytes (two codes a byte, the low nibble first) as twice their values, int8: values 0-15 in
// first, 16-31 in second.
inline void twice_e2m1(const uint8_t* codes, __m128i& first, __m128i& second) {
  const __m128i twice = _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
  const __m128i nibble = _mm_set1_epi8(0x0f);
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes));
  const __m128i low = _mm_shuffle_epi8(twice, _mm_and_si128(bytes, nibble));
  const __m128i high = _mm_shuffle_epi8(twice, _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble));
  first = _mm_unpacklo_epi8(low, high);
  second = _mm_unpackhi_epi8(low, high);
}

}  // namespace
}  // namespace ft::cpu
