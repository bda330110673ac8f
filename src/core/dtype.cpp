// Element type names and the exact conversions between floats and the narrow formats.
#include "core/dtype.h"

#include <cmath>
#include <limits>
#include <string>

namespace ft {
namespace {

enum class Overflow { kInfinity, kNan, kSaturate };

// A narrow binary float: sign, `ebits` exponent bits with `bias`, `mbits` stored significand bits.
struct MiniFloat {
  int ebits;
  int mbits;
  int bias;
  bool ieee_specials;  // the top exponent code is inf/NaN
  bool fn_nan;         // e4m3fn: only all-ones exponent and significand is NaN
  Overflow overflow;
  uint32_t nan_code;
};

constexpr MiniFloat kF16Fmt{5, 10, 15, true, false, Overflow::kInfinity, 0x7e00};
constexpr MiniFloat kE4M3Fmt{4, 3, 7, false, true, Overflow::kNan, 0x7f};
constexpr MiniFloat kE5M2Fmt{5, 2, 15, true, false, Overflow::kInfinity, 0x7e};
constexpr MiniFloat kE2M1Fmt{2, 1, 1, false, false, Overflow::kSaturate, 0x0};
constexpr MiniFloat kBF16Fmt{8, 7, 127, true, false, Overflow::kInfinity, 0x7fc0};

double minifloat_max(const MiniFloat& f) {
  int emax = (1 << f.ebits) - 1 - f.bias - (f.ieee_specials ? 1 : 0);
  double mant = 2.0 - std::ldexp(1.0, -f.mbits);
  if (f.fn_nan) mant -= std::ldexp(1.0, -f.mbits);  // all-ones significand is NaN at the top
  return std::ldexp(mant, emax);
}

double decode_minifloat(const MiniFloat& f, uint32_t code) {
  const uint32_t sign = (code >> (f.ebits + f.mbits)) & 1u;
  const uint32_t e = (code >> f.mbits) & ((1u << f.ebits) - 1);
  const uint32_t m = code & ((1u << f.mbits) - 1);
  const uint32_t emax_code = (1u << f.ebits) - 1;
  double v;
  if (f.ieee_specials && e == emax_code) {
    v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (f.fn_nan && e == emax_code && m == (1u << f.mbits) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - f.bias - f.mbits);
  } else {
    v = std::ldexp(static_cast<double>(m + (1u << f.mbits)), static_cast<int>(e) - f.bias - f.mbits);
  }
  return sign ? -v : v;
}

uint32_t encode_minifloat(const MiniFloat& f, double x) {
  const uint32_t sign_bit = 1u << (f.ebits + f.mbits);
  if (std::isnan(x)) return f.nan_code;
  const uint32_t sign = std::signbit(x) ? sign_bit : 0u;
  double a = std::fabs(x);
  const double max = minifloat_max(f);
  const uint32_t inf_code = (((1u << f.ebits) - 1) << f.mbits);
  auto overflow = [&]() -> uint32_t {
    switch (f.overflow) {
      case Overflow::kInfinity: return sign | inf_code;
      case Overflow::kNan: return sign | f.nan_code;
      case Overflow::kSaturate: return sign | encode_minifloat(f, max);
    }
    return 0;
  };
  if (std::isinf(a)) return overflow();
  if (a == 0.0) return sign;
  int e2;
  std::frexp(a, &e2);  // a = fr * 2^e2, fr in [0.5, 1)
  int exp_unb = e2 - 1;
  const int emin = 1 - f.bias;
  if (exp_unb < emin) exp_unb = emin;
  // a / quantum is exact in double; nearbyint rounds half to even in the default rounding mode.
  double n = std::nearbyint(std::ldexp(a, f.mbits - exp_unb));
  if (n >= std::ldexp(1.0, f.mbits + 1)) {
    exp_unb += 1;
    n = std::ldexp(1.0, f.mbits);
  }
  if (std::ldexp(n, exp_unb - f.mbits) > max) return overflow();
  const uint32_t ni = static_cast<uint32_t>(n);
  if (ni < (1u << f.mbits)) return sign | ni;  // subnormal (or zero after rounding)
  const uint32_t biased = static_cast<uint32_t>(exp_unb + f.bias);
  return sign | (biased << f.mbits) | (ni - (1u << f.mbits));
}

}  // namespace

float f16_to_f32(uint16_t h) { return static_cast<float>(decode_minifloat(kF16Fmt, h)); }
uint16_t f32_to_f16(float f) { return static_cast<uint16_t>(encode_minifloat(kF16Fmt, f)); }
float e4m3_to_f32(uint8_t v) { return static_cast<float>(decode_minifloat(kE4M3Fmt, v)); }
uint8_t f32_to_e4m3(float f) { return static_cast<uint8_t>(encode_minifloat(kE4M3Fmt, f)); }
float e5m2_to_f32(uint8_t v) { return static_cast<float>(decode_minifloat(kE5M2Fmt, v)); }
uint8_t f32_to_e5m2(float f) { return static_cast<uint8_t>(encode_minifloat(kE5M2Fmt, f)); }
float e2m1_to_f32(uint8_t nibble) { return static_cast<float>(decode_minifloat(kE2M1Fmt, nibble & 0xf)); }
uint8_t f32_to_e2m1(float f) { return static_cast<uint8_t>(encode_minifloat(kE2M1Fmt, f)); }

float ue8m0_to_f32(uint8_t v) {
  if (v == 0xff) return std::numeric_limits<float>::quiet_NaN();
  return static_cast<float>(std::ldexp(1.0, static_cast<int>(v) - 127));
}

uint8_t f32_to_ue8m0(float f) {
  if (std::isnan(f) || std::isinf(f)) return 0xff;
  if (!(f > 0.0f)) return 0;
  int e2;
  double fr = std::frexp(static_cast<double>(f), &e2);  // f = fr * 2^e2, fr in [0.5, 1)
  int e = e2 - 1;                                       // f = (2 fr) * 2^e, 2 fr in [1, 2)
  double m = 2.0 * fr;
  // Nearest power of two on the linear scale: 2^e or 2^(e+1); the midpoint is 1.5 * 2^e.
  if (m > 1.5 || (m == 1.5 && ((e + 127) & 1))) e += 1;
  if (e < -127) return 0;
  if (e > 127) return 0xff;
  return static_cast<uint8_t>(e + 127);
}

size_t dtype_bits(DType t) {
  switch (t) {
    case DType::kF32: return 32;
    case DType::kF64: return 64;
    case DType::kF16: return 16;
    case DType::kBF16: return 16;
    case DType::kF8E4M3: return 8;
    case DType::kF8E5M2: return 8;
    case DType::kF4E2M1: return 4;
    case DType::kUE8M0: return 8;
    case DType::kI8: return 8;
    case DType::kU8: return 8;
    case DType::kI16: return 16;
    case DType::kI32: return 32;
    case DType::kI64: return 64;
    case DType::kBool: return 8;
  }
  return 0;
}

bool dtype_is_float(DType t) {
  switch (t) {
    case DType::kF32: case DType::kF64: case DType::kF16: case DType::kBF16: case DType::kF8E4M3:
    case DType::kF8E5M2: case DType::kF4E2M1: case DType::kUE8M0:
      return true;
    default:
      return false;
  }
}

namespace {
struct DTypeNames {
  DType type;
  const char* name;         // ours
  const char* safetensors;  // the safetensors header's
};
constexpr DTypeNames kNames[] = {
    {DType::kF32, "f32", "F32"},         {DType::kF64, "f64", "F64"},
    {DType::kF16, "f16", "F16"},         {DType::kBF16, "bf16", "BF16"},
    {DType::kF8E4M3, "f8_e4m3", "F8_E4M3"}, {DType::kF8E5M2, "f8_e5m2", "F8_E5M2"},
    {DType::kF4E2M1, "f4_e2m1", "F4"},   {DType::kUE8M0, "ue8m0", "F8_E8M0"},
    {DType::kI8, "i8", "I8"},            {DType::kU8, "u8", "U8"},
    {DType::kI16, "i16", "I16"},         {DType::kI32, "i32", "I32"},
    {DType::kI64, "i64", "I64"},         {DType::kBool, "bool", "BOOL"},
};
}  // namespace

const char* dtype_name(DType t) {
  for (const auto& n : kNames)
    if (n.type == t) return n.name;
  return "?";
}

const char* dtype_to_safetensors(DType t) {
  for (const auto& n : kNames)
    if (n.type == t) return n.safetensors;
  return "?";
}

Result<DType> dtype_from_safetensors(std::string_view name) {
  for (const auto& n : kNames)
    if (name == n.safetensors) return n.type;
  if (name == "E8M0") return DType::kUE8M0;
  return unsupported("unknown dtype '" + std::string(name) + "'");
}

Result<DType> dtype_from_name(std::string_view name) {
  for (const auto& n : kNames)
    if (name == n.name) return n.type;
  if (name == "float32") return DType::kF32;
  if (name == "bfloat16") return DType::kBF16;
  if (name == "float16") return DType::kF16;
  return invalid_argument("unknown dtype '" + std::string(name) + "'");
}

double load_as_f64(DType t, const void* data, size_t i) {
  const auto* b = static_cast<const uint8_t*>(data);
  switch (t) {
    case DType::kF32: return static_cast<const float*>(data)[i];
    case DType::kF64: return static_cast<const double*>(data)[i];
    case DType::kF16: return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::kBF16: return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::kF8E4M3: return e4m3_to_f32(b[i]);
    case DType::kF8E5M2: return e5m2_to_f32(b[i]);
    case DType::kF4E2M1: return e2m1_to_f32(static_cast<uint8_t>(b[i / 2] >> (4 * (i & 1))));
    case DType::kUE8M0: return ue8m0_to_f32(b[i]);
    case DType::kI8: return static_cast<const int8_t*>(data)[i];
    case DType::kU8: return b[i];
    case DType::kI16: return static_cast<const int16_t*>(data)[i];
    case DType::kI32: return static_cast<const int32_t*>(data)[i];
    case DType::kI64: return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case DType::kBool: return b[i] ? 1.0 : 0.0;
  }
  return 0.0;
}

void store_from_f64(DType t, void* data, size_t i, double v) {
  auto* b = static_cast<uint8_t*>(data);
  switch (t) {
    case DType::kF32: static_cast<float*>(data)[i] = static_cast<float>(v); return;
    case DType::kF64: static_cast<double*>(data)[i] = v; return;
    case DType::kF16: static_cast<uint16_t*>(data)[i] = static_cast<uint16_t>(encode_minifloat(kF16Fmt, v)); return;
    case DType::kBF16: static_cast<uint16_t*>(data)[i] = static_cast<uint16_t>(encode_minifloat(kBF16Fmt, v)); return;
    case DType::kF8E4M3: b[i] = static_cast<uint8_t>(encode_minifloat(kE4M3Fmt, v)); return;
    case DType::kF8E5M2: b[i] = static_cast<uint8_t>(encode_minifloat(kE5M2Fmt, v)); return;
    case DType::kF4E2M1: {
      uint8_t nib = static_cast<uint8_t>(encode_minifloat(kE2M1Fmt, v));
      int sh = 4 * static_cast<int>(i & 1);
      b[i / 2] = static_cast<uint8_t>((b[i / 2] & ~(0xf << sh)) | (nib << sh));
      return;
    }
    case DType::kUE8M0: b[i] = f32_to_ue8m0(static_cast<float>(v)); return;
    case DType::kI8: static_cast<int8_t*>(data)[i] = static_cast<int8_t>(v); return;
    case DType::kU8: b[i] = static_cast<uint8_t>(v); return;
    case DType::kI16: static_cast<int16_t*>(data)[i] = static_cast<int16_t>(v); return;
    case DType::kI32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v); return;
    case DType::kI64: static_cast<int64_t*>(data)[i] = static_cast<int64_t>(v); return;
    case DType::kBool: b[i] = v != 0.0; return;
  }
}

}  // namespace ft
