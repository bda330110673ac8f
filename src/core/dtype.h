// Element types and exact conversions (bf16, f16, f8 e4m3/e5m2, fp4 e2m1, ue8m0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "freetoken/status.h"

namespace ft {

enum class DType : uint8_t {
  kF32,
  kF64,
  kF16,
  kBF16,
  kF8E4M3,  // OCP e4m3fn: no infinities, 0x7f/0xff are NaN, max 448
  kF8E5M2,  // IEEE-like: infinities and NaN, max 57344
  kF4E2M1,  // OCP fp4: {0, 0.5, 1, 1.5, 2, 3, 4, 6} and signs; two per byte, low nibble first
  kUE8M0,   // unsigned power-of-two scale 2^(e-127); 0xff is NaN
  kI8,
  kU8,
  kI16,
  kI32,
  kI64,
  kBool,
};

size_t dtype_bits(DType t);
const char* dtype_name(DType t);
// Bytes taken by n elements (rounding sub-byte types up to whole bytes).
inline size_t dtype_bytes(DType t, size_t n) { return (n * dtype_bits(t) + 7) / 8; }
bool dtype_is_float(DType t);
// Safetensors' names: "F32", "BF16", "F8_E4M3", "F4", "F8_E8M0", ...
Result<DType> dtype_from_safetensors(std::string_view name);
const char* dtype_to_safetensors(DType t);
// Names used on the command line: "f32", "bf16", ...
Result<DType> dtype_from_name(std::string_view name);

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// bf16 <-> f32. bf16 -> f32 is exact; f32 -> bf16 rounds to nearest even, NaN stays NaN.
inline float bf16_to_f32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// IEEE half <-> f32 (round to nearest even, overflow to infinity, subnormals kept).
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// fp8 e4m3fn <-> f32: round to nearest even; values beyond 448 after rounding become NaN (as c10).
float e4m3_to_f32(uint8_t v);
uint8_t f32_to_e4m3(float f);
// fp8 e5m2 <-> f32: round to nearest even; overflow to infinity.
float e5m2_to_f32(uint8_t v);
uint8_t f32_to_e5m2(float f);
// fp4 e2m1 (one nibble) <-> f32: round to nearest even; saturates at +-6 (infinities too); NaN -> +0.
float e2m1_to_f32(uint8_t nibble);
uint8_t f32_to_e2m1(float f);
// ue8m0 <-> f32: 2^(e-127). Encoding rounds the significand to the nearest power of two (ties to the
// even exponent code); zero, negatives and values below 2^-127 map to code 0; NaN/inf to 0xff.
float ue8m0_to_f32(uint8_t v);
uint8_t f32_to_ue8m0(float f);

// Element i of a buffer of type t as double (floats and integers; bool as 0/1).
double load_as_f64(DType t, const void* data, size_t i);
// Stores v at element i of a buffer of type t (floats round to nearest even; integers truncate).
void store_from_f64(DType t, void* data, size_t i, double v);

}  // namespace ft
