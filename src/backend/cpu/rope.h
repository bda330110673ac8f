// The pieces of rope, shared by rope and qk_norm_rope_store so both rotate alike: a token's cos/sin table, then each
// head row rotated with it.
#pragma once

#include <cmath>
#include <cstdint>

namespace ft::cpu {

inline constexpr int64_t kRopeMaxHalf = 512;  // rot_dim / 2 limit of the per-token cos/sin table on the stack

// cs[i], sn[i] (i < half) = cos and sin of angle = f32(pos) * inv_freq[i] (a float multiply, as transformers forms
// it), taken in double, times factor, rounded to float.
inline void rope_angles(int32_t pos, const float* inv_freq, int64_t half, float factor, float* cs, float* sn) {
  for (int64_t i = 0; i < half; ++i) {
    const float angle = static_cast<float>(pos) * inv_freq[i];
    cs[i] = static_cast<float>(std::cos(static_cast<double>(angle)) * factor);
    sn[i] = static_cast<float>(std::sin(static_cast<double>(angle)) * factor);
  }
}

// One head row [hd]: pairs (i, i + half) (rotate-half) or (2i, 2i + 1) (interleaved), i < half, rotated from x into
// o (may alias x); the dims past 2 half are copied when o is not x.
inline void rope_row(const float* x, float* o, const float* cs, const float* sn, int64_t half, int64_t hd,
                     bool interleaved) {
  const int64_t step = interleaved ? 2 : 1, other = interleaved ? 1 : half;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t a = i * step, b = a + other;
    const float x0 = x[a], x1 = x[b];
    o[a] = x0 * cs[i] - x1 * sn[i];
    o[b] = x1 * cs[i] + x0 * sn[i];
  }
  if (o != x)
    for (int64_t i = 2 * half; i < hd; ++i) o[i] = x[i];
}

}  // namespace ft::cpu
