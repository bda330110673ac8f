// The portable kernel table: one float per "vector", for machines without AVX2 and for testing.
#include <cmath>

#include "backend/cpu/kernels_body.h"

namespace ft::cpu {
namespace {

struct Scalar {
  using V = float;
  static constexpr int kW = 1;
  static constexpr bool kHasBf16Store = false;
  static V zero() { return 0.0f; }
  static V set1(float f) { return f; }
  static V load(const float* p) { return *p; }
  static V load(const uint16_t* p) { return widen(*p); }
  static void store(float* p, V v) { *p = v; }
  static V fma(V a, V b, V c) { return a * b + c; }
  static V mul(V a, V b) { return a * b; }
  static V add(V a, V b) { return a + b; }
  static V div(V a, V b) { return a / b; }
  static V exp(V x) { return std::exp(x); }
  static void mxfp4_x(const float* x, V* out) {
    for (int i = 0; i < 32; ++i) out[i] = x[i];
  }
  static void mxfp4_weights(const uint8_t* codes, float scale, V* out) {
    static constexpr float kValue[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
    for (int i = 0; i < 16; ++i) {
      out[2 * i] = kValue[codes[i] & 0x0f] * scale;
      out[2 * i + 1] = kValue[codes[i] >> 4] * scale;
    }
  }
  static float sum(V v) { return v; }
};

}  // namespace

const CpuKernels& scalar_kernels() {
  static const CpuKernels k = make_kernels<Scalar>();
  return k;
}

}  // namespace ft::cpu
