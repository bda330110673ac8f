// MXFP4 rows to f32: each group's e2m1 codes through a 16-entry table, times its scale (core/dtype.h's decoders; the
// product is exact: a 2-bit significand times a power of two).
#include "io/mxfp4.h"

#include <array>

#include "core/dtype.h"

namespace ft {

void dequantize_mxfp4_row(const uint8_t* blocks, const uint8_t* scales, int64_t groups, float* out) {
  static const std::array<float, 16> e2m1 = [] {
    std::array<float, 16> t{};
    for (uint8_t code = 0; code < 16; ++code) t[code] = e2m1_to_f32(code);
    return t;
  }();
  for (int64_t g = 0; g < groups; ++g) {
    const float scale = ue8m0_to_f32(scales[g]);
    const uint8_t* b = blocks + g * kMxfp4GroupBytes;
    float* o = out + g * kMxfp4Group;
    for (int64_t i = 0; i < kMxfp4GroupBytes; ++i) {
      o[2 * i] = e2m1[b[i] & 0x0f] * scale;
      o[2 * i + 1] = e2m1[b[i] >> 4] * scale;
    }
  }
}

}  // namespace ft
