// MXFP4 rows to f32: a 16-entry table of the e2m1 values times each group's power of two (a product that is exact:
// a 2-bit significand times a power of two, as transformers' ldexp forms it).
#include "io/mxfp4.h"

#include <cmath>

namespace ft {

void dequantize_mxfp4_row(const uint8_t* blocks, const uint8_t* scales, int64_t groups, float* out) {
  static constexpr float kE2m1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                      -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  for (int64_t g = 0; g < groups; ++g) {
    const float scale = std::ldexp(1.0f, static_cast<int>(scales[g]) - 127);
    const uint8_t* b = blocks + g * kMxfp4GroupBytes;
    float* o = out + g * kMxfp4Group;
    for (int64_t i = 0; i < kMxfp4GroupBytes; ++i) {
      o[2 * i] = kE2m1[b[i] & 0x0f] * scale;
      o[2 * i + 1] = kE2m1[b[i] >> 4] * scale;
    }
  }
}

}  // namespace ft
