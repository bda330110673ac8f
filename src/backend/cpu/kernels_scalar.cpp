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
  static float sum(V v) { return v; }
};

}  // namespace

const CpuKernels& scalar_kernels() {
  static const CpuKernels k = make_kernels<Scalar>();
  return k;
}

}  // namespace ft::cpu
