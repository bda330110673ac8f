// MXFP4 (the OCP microscaling format with FP4 elements), as gpt-oss's checkpoints store their experts: groups of 32
// e2m1 values (1 sign, 2 exponent, 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives) sharing an e8m0
// scale 2^(s - 127) (ue8m0; 0xff is NaN). A checkpoint tensor `W` [..., out, in] is stored as `W_blocks`
// [..., out, in / 32, 16] u8 (two codes a byte, the low nibble first) and `W_scales` [..., out, in / 32] u8.
#pragma once

#include <cstdint>
#include <string_view>

namespace ft {

inline constexpr int64_t kMxfp4Group = 32;  // values per scale
inline constexpr int64_t kMxfp4GroupBytes = kMxfp4Group / 2;
inline constexpr std::string_view kMxfp4Blocks = "_blocks", kMxfp4Scales = "_scales";  // suffixes of W's two parts

// One row of `groups` groups: blocks [groups, 16], scales [groups] -> out [groups * 32], exact in f32 (and in bf16).
void dequantize_mxfp4_row(const uint8_t* blocks, const uint8_t* scales, int64_t groups, float* out);

}  // namespace ft
