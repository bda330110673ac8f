// Narrow float conversions against the formats' spec formulas, anchor values, and a brute-force
// nearest-representable search with ties to the even code written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "core/dtype.h"

namespace ft {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The spec of one format: exponent/significand widths and bias, and how its top codes are used.
enum class Top { kIeee, kFnNan, kFinite };  // IEEE inf/NaN; e4m3fn (only S.1111.111 NaN); all finite
struct Spec {
  int ebits, mbits, bias;
  Top top;
};
constexpr Spec kF16Spec{5, 10, 15, Top::kIeee};
constexpr Spec kBF16Spec{8, 7, 127, Top::kIeee};
constexpr Spec kE4M3Spec{4, 3, 7, Top::kFnNan};
constexpr Spec kE5M2Spec{5, 2, 15, Top::kIeee};
constexpr Spec kE2M1Spec{2, 1, 1, Top::kFinite};

// (-1)^s * 2^(1-bias) * m/2^M for e == 0, (-1)^s * 2^(e-bias) * (1 + m/2^M) otherwise.
double spec_value(const Spec& s, uint32_t code) {
  const uint32_t m = code & ((1u << s.mbits) - 1);
  const uint32_t e = (code >> s.mbits) & ((1u << s.ebits) - 1);
  const bool neg = (code >> (s.mbits + s.ebits)) & 1;
  const uint32_t e_all = (1u << s.ebits) - 1, m_all = (1u << s.mbits) - 1;
  double v;
  if (s.top == Top::kIeee && e == e_all) {
    v = m == 0 ? kInf : kNaN;
  } else if (s.top == Top::kFnNan && e == e_all && m == m_all) {
    v = kNaN;
  } else if (e == 0) {
    v = std::pow(2.0, 1 - s.bias) * (static_cast<double>(m) / std::pow(2.0, s.mbits));
  } else {
    v = std::pow(2.0, static_cast<double>(e) - s.bias) * (1.0 + static_cast<double>(m) / std::pow(2.0, s.mbits));
  }
  return neg ? -v : v;
}

// The non-negative finite grid of a format: value -> code, ascending.
struct Grid {
  std::vector<double> value;
  std::vector<uint32_t> code;
};
Grid positive_grid(const std::function<double(uint32_t)>& decode, uint32_t n_magnitude_codes) {
  Grid g;
  for (uint32_t c = 0; c < n_magnitude_codes; ++c) {
    const double v = decode(c);
    if (std::isfinite(v)) {
      g.value.push_back(v);
      g.code.push_back(c);
    }
  }
  // Codes ascend with value within the non-negative half of every format here.
  EXPECT_TRUE(std::is_sorted(g.value.begin(), g.value.end()));
  return g;
}

// What a correct encoder returns for x: the nearest grid value, ties to the even code. The grid is
// extended by one step past the largest finite value (code max+1): landing there is an overflow.
struct Expected {
  bool overflow;
  uint32_t magnitude_code;
};
Expected nearest(const Grid& g, double ax) {
  const size_t n = g.value.size();
  const double top = g.value[n - 1] + (g.value[n - 1] - g.value[n - 2]);
  const uint32_t top_code = g.code[n - 1] + 1;
  auto it = std::lower_bound(g.value.begin(), g.value.end(), ax);
  size_t hi = static_cast<size_t>(it - g.value.begin());
  if (hi < n && g.value[hi] == ax) return {false, g.code[hi]};
  if (hi == 0) return {false, g.code[0]};
  const double lo_v = g.value[hi - 1];
  const uint32_t lo_c = g.code[hi - 1];
  const double hi_v = hi < n ? g.value[hi] : top;
  const uint32_t hi_c = hi < n ? g.code[hi] : top_code;
  if (ax > hi_v) return {true, top_code};  // beyond even the extension
  const double dl = ax - lo_v, dh = hi_v - ax;
  const uint32_t pick = dl < dh ? lo_c : dh < dl ? hi_c : ((lo_c & 1) == 0 ? lo_c : hi_c);
  return {pick == top_code, pick};
}

// Random inputs: random float bit patterns (every magnitude), values spread over the format's range
// on a log scale, and every midpoint between neighbours together with its two float neighbours.
std::vector<float> test_inputs(const Grid& g, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> xs;
  for (int i = 0; i < 20000; ++i) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isfinite(f)) xs.push_back(f);
  }
  const double lo = std::log2(g.value[1]) - 3, hi = std::log2(g.value.back()) + 2;
  std::uniform_real_distribution<double> u(lo, hi);
  for (int i = 0; i < 20000; ++i) {
    const float f = static_cast<float>(std::exp2(u(rng)));
    xs.push_back(i % 2 ? -f : f);
  }
  for (size_t i = 0; i + 1 < g.value.size(); ++i) {
    const float mid = static_cast<float>((g.value[i] + g.value[i + 1]) / 2);
    EXPECT_EQ(static_cast<double>(mid), (g.value[i] + g.value[i + 1]) / 2) << "midpoint exact in float";
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      xs.push_back(f);
      xs.push_back(-f);
    }
  }
  return xs;
}

// Checks encode(x) for every input against the search; `overflow_code` is what a too-large
// magnitude encodes to (before the sign), or nullopt when the encoder saturates at the max.
void check_encoder(const Grid& g, uint32_t sign_bit, const std::function<uint32_t(float)>& encode,
                   const std::function<double(uint32_t)>& decode, std::optional<uint32_t> overflow_code,
                   uint32_t seed) {
  int bad = 0;
  for (float x : test_inputs(g, seed)) {
    const Expected e = nearest(g, std::fabs(static_cast<double>(x)));
    uint32_t want = e.magnitude_code;
    if (e.overflow) want = overflow_code ? *overflow_code : g.code.back();
    if (std::signbit(x)) want |= sign_bit;
    const uint32_t got = encode(x);
    const bool want_nan = std::isnan(decode(want));
    const bool ok = want_nan ? std::isnan(decode(got)) : got == want;
    if (!ok && ++bad <= 10)
      ADD_FAILURE() << "x=" << x << " (bits 0x" << std::hex << std::bit_cast<uint32_t>(x) << ") encoded 0x" << got
                    << ", expected 0x" << want << std::dec;
  }
  EXPECT_EQ(bad, 0);
}

TEST(DTypeDecode, EveryCodeMatchesTheSpecFormula) {
  struct Case {
    const char* name;
    Spec spec;
    uint32_t n_codes;
    std::function<double(uint32_t)> decode;
  };
  const Case cases[] = {
      {"f16", kF16Spec, 1u << 16, [](uint32_t c) { return double{f16_to_f32(static_cast<uint16_t>(c))}; }},
      {"bf16", kBF16Spec, 1u << 16, [](uint32_t c) { return double{bf16_to_f32(static_cast<uint16_t>(c))}; }},
      {"e4m3", kE4M3Spec, 256, [](uint32_t c) { return double{e4m3_to_f32(static_cast<uint8_t>(c))}; }},
      {"e5m2", kE5M2Spec, 256, [](uint32_t c) { return double{e5m2_to_f32(static_cast<uint8_t>(c))}; }},
      {"e2m1", kE2M1Spec, 16, [](uint32_t c) { return double{e2m1_to_f32(static_cast<uint8_t>(c))}; }},
  };
  for (const Case& c : cases) {
    int bad = 0;
    for (uint32_t code = 0; code < c.n_codes; ++code) {
      const double want = spec_value(c.spec, code), got = c.decode(code);
      const bool ok = std::isnan(want) ? std::isnan(got) : got == want && std::signbit(got) == std::signbit(want);
      if (!ok && ++bad <= 10)
        ADD_FAILURE() << c.name << " code 0x" << std::hex << code << std::dec << ": " << got << " != " << want;
    }
    EXPECT_EQ(bad, 0) << c.name;
  }
  for (uint32_t code = 0; code < 255; ++code)
    EXPECT_EQ(double{ue8m0_to_f32(static_cast<uint8_t>(code))}, std::pow(2.0, static_cast<double>(code) - 127)) << code;
  EXPECT_TRUE(std::isnan(ue8m0_to_f32(0xff)));
}

TEST(DTypeDecode, AnchorValues) {
  EXPECT_EQ(e4m3_to_f32(0x7e), 448.0f);
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0xff)));
  EXPECT_EQ(e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(e5m2_to_f32(0x7b), 57344.0f);
  EXPECT_EQ(e5m2_to_f32(0x7c), std::numeric_limits<float>::infinity());
  EXPECT_EQ(e5m2_to_f32(0xfc), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(e5m2_to_f32(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0x7f7f), 3.3895313892515355e38f);
  const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (uint8_t c = 0; c < 8; ++c) {
    EXPECT_EQ(e2m1_to_f32(c), e2m1[c]) << int{c};
    EXPECT_EQ(e2m1_to_f32(static_cast<uint8_t>(c | 8)), -e2m1[c]) << int{c};
  }
  EXPECT_EQ(ue8m0_to_f32(127), 1.0f);
  EXPECT_EQ(ue8m0_to_f32(128), 2.0f);
  EXPECT_EQ(ue8m0_to_f32(0), std::ldexp(1.0f, -127));
}

TEST(DTypeEncode, F16NearestEvenOverflowToInfinity) {
  auto dec = [](uint32_t c) { return double{f16_to_f32(static_cast<uint16_t>(c))}; };
  check_encoder(
      positive_grid(dec, 0x8000), 0x8000, [](float x) { return uint32_t{f32_to_f16(x)}; }, dec, 0x7c00, 1);
}

TEST(DTypeEncode, BF16NearestEvenOverflowToInfinity) {
  auto dec = [](uint32_t c) { return double{bf16_to_f32(static_cast<uint16_t>(c))}; };
  check_encoder(
      positive_grid(dec, 0x8000), 0x8000, [](float x) { return uint32_t{f32_to_bf16(x)}; }, dec, 0x7f80, 2);
}

TEST(DTypeEncode, E4M3NearestEvenOverflowToNaN) {
  auto dec = [](uint32_t c) { return double{e4m3_to_f32(static_cast<uint8_t>(c))}; };
  check_encoder(
      positive_grid(dec, 0x80), 0x80, [](float x) { return uint32_t{f32_to_e4m3(x)}; }, dec, 0x7f, 3);
  // As c10: up to 464 rounds to 448, above it to NaN; infinities are NaN.
  EXPECT_EQ(f32_to_e4m3(464.0f), 0x7e);
  EXPECT_TRUE(std::isnan(e4m3_to_f32(f32_to_e4m3(464.01f))));
  EXPECT_TRUE(std::isnan(e4m3_to_f32(f32_to_e4m3(std::numeric_limits<float>::infinity()))));
  EXPECT_EQ(f32_to_e4m3(-448.0f), 0xfe);
}

TEST(DTypeEncode, E5M2NearestEvenOverflowToInfinity) {
  auto dec = [](uint32_t c) { return double{e5m2_to_f32(static_cast<uint8_t>(c))}; };
  check_encoder(
      positive_grid(dec, 0x80), 0x80, [](float x) { return uint32_t{f32_to_e5m2(x)}; }, dec, 0x7c, 4);
  EXPECT_EQ(f32_to_e5m2(61439.0f), 0x7b);
  EXPECT_EQ(f32_to_e5m2(61440.0f), 0x7c);
  EXPECT_EQ(f32_to_e5m2(-std::numeric_limits<float>::infinity()), 0xfc);
}

TEST(DTypeEncode, E2M1NearestEvenSaturatesAtSix) {
  auto dec = [](uint32_t c) { return double{e2m1_to_f32(static_cast<uint8_t>(c))}; };
  check_encoder(
      positive_grid(dec, 8), 8, [](float x) { return uint32_t{f32_to_e2m1(x)}; }, dec, std::nullopt, 5);
  EXPECT_EQ(f32_to_e2m1(0.25f), 0x0);  // tie between 0 and 0.5 -> even code 0
  EXPECT_EQ(f32_to_e2m1(2.5f), 0x4);   // tie between 2 and 3 -> 2
  EXPECT_EQ(f32_to_e2m1(5.0f), 0x6);   // tie between 4 and 6 -> 4
  EXPECT_EQ(f32_to_e2m1(1e30f), 0x7);
  EXPECT_EQ(f32_to_e2m1(std::numeric_limits<float>::infinity()), 0x7);
  EXPECT_EQ(f32_to_e2m1(-std::numeric_limits<float>::infinity()), 0xf);
}

TEST(DTypeEncode, UE8M0NearestPowerOfTwoTiesToEvenCode) {
  // Grid 2^(c-127) for c = 0..254; past 2^127 (towards 2^128) overflows to the NaN code 0xff.
  std::mt19937 rng(6);
  std::vector<float> xs;
  for (int i = 0; i < 50000; ++i) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(rng()) & 0x7fffffffu);
    if (std::isfinite(f)) xs.push_back(f);
  }
  for (int e = -126; e <= 127; ++e) xs.push_back(std::ldexp(1.5f, e - 1));  // every midpoint
  int bad = 0;
  for (float x : xs) {
    const double ax = x;
    uint32_t want = 0;
    double best = kInf;
    for (uint32_t c = 0; c <= 255; ++c) {  // c = 255 stands for 2^128, the overflow
      const double d = std::fabs(ax - std::ldexp(1.0, static_cast<int>(c) - 127));
      if (d < best || (d == best && (c & 1) == 0)) {
        best = d;
        want = c;
      }
    }
    const uint32_t got = f32_to_ue8m0(x);
    if (got != want && ++bad <= 10) ADD_FAILURE() << "x=" << x << " got " << got << " want " << want;
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(f32_to_ue8m0(1.0f), 127);
  EXPECT_EQ(f32_to_ue8m0(1.5f), 128);  // tie between codes 127 and 128 -> 128
  EXPECT_EQ(f32_to_ue8m0(3.0f), 128);  // tie between codes 128 and 129 -> 128
  EXPECT_EQ(f32_to_ue8m0(0.0f), 0);
  EXPECT_EQ(f32_to_ue8m0(-4.0f), 0);
  EXPECT_EQ(f32_to_ue8m0(std::numeric_limits<float>::infinity()), 0xff);
}

TEST(DTypeEncode, NaNStaysNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float neg_nan = -nan;
  const float snan = std::numeric_limits<float>::signaling_NaN();
  for (float x : {nan, neg_nan, snan}) {
    EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(x))));
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(x))));
    EXPECT_TRUE(std::isnan(e4m3_to_f32(f32_to_e4m3(x))));
    EXPECT_TRUE(std::isnan(e5m2_to_f32(f32_to_e5m2(x))));
    EXPECT_EQ(f32_to_ue8m0(x), 0xff);
    EXPECT_EQ(f32_to_e2m1(x), 0x0);  // fp4 has no NaN: documented as +0
  }
  // A NaN whose payload sits only in the low 16 bits must not turn into bf16 infinity.
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::bit_cast<float>(0x7f800001u)))));
}

TEST(DTypeEncode, StoreAndLoadThroughF64) {
  // store_from_f64 rounds straight from double: check against the float path where float is exact.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-500.0f, 500.0f);
  for (int i = 0; i < 2000; ++i) {
    const float x = u(rng);
    uint8_t b8[2] = {0, 0};
    uint16_t b16 = 0;
    store_from_f64(DType::kF8E4M3, b8, 0, x);
    EXPECT_EQ(b8[0], f32_to_e4m3(x));
    store_from_f64(DType::kF16, &b16, 0, x);
    EXPECT_EQ(b16, f32_to_f16(x));
    EXPECT_EQ(load_as_f64(DType::kF16, &b16, 0), double{f16_to_f32(b16)});
    store_from_f64(DType::kBF16, &b16, 0, x);
    EXPECT_EQ(b16, f32_to_bf16(x));
    store_from_f64(DType::kF4E2M1, b8, 1, x / 50);  // high nibble of byte 0
    EXPECT_EQ(b8[0] >> 4, f32_to_e2m1(x / 50));
    EXPECT_EQ(load_as_f64(DType::kF4E2M1, b8, 1), double{e2m1_to_f32(f32_to_e2m1(x / 50))});
  }
}

TEST(DTypeNames, SafetensorsNamesRoundTrip) {
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kF8E4M3, DType::kF8E5M2, DType::kF4E2M1,
                  DType::kUE8M0, DType::kI8, DType::kU8, DType::kI16, DType::kI32, DType::kI64, DType::kBool}) {
    auto back = dtype_from_safetensors(dtype_to_safetensors(t));
    ASSERT_TRUE(back.ok()) << dtype_to_safetensors(t);
    EXPECT_EQ(back.value(), t);
    auto by_name = dtype_from_name(dtype_name(t));
    ASSERT_TRUE(by_name.ok()) << dtype_name(t);
    EXPECT_EQ(by_name.value(), t);
  }
  EXPECT_EQ(dtype_from_safetensors("Q4").status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(dtype_bytes(DType::kF4E2M1, 5), 3u);
  EXPECT_EQ(dtype_bytes(DType::kBF16, 5), 10u);
}

}  // namespace
}  // namespace ft
