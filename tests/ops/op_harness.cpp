// Op harness helpers: seeded random tensors, NMSE, mismatch listings and the ISA levels to test.
#include "op_harness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "core/check.h"

namespace ft::test {
namespace {

// Element i (in row-major order over the shape) of any-strided t, as double.
double value_at(const Tensor& t, int64_t i) {
  int64_t off = 0;
  for (int d = t.ndim - 1; d >= 0; --d) {
    off += (i % t.shape[d]) * t.stride[d];
    i /= t.shape[d];
  }
  return load_as_f64(t.dtype, t.data(), static_cast<size_t>(off));
}

}  // namespace

Tensor make_tensor(DType dtype, std::initializer_list<int64_t> shape) {
  auto t = Tensor::host(dtype, shape);
  FT_CHECK(t.ok());
  return std::move(t).value();
}

void fill_normal(const Tensor& t, uint64_t seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(0.0, scale);
  for (int64_t i = 0; i < t.numel(); ++i) store_from_f64(t.dtype, t.data(), static_cast<size_t>(i), dist(rng));
}

void copy_values(const Tensor& src, const Tensor& dst) {
  FT_CHECK(src.numel() == dst.numel());
  for (int64_t i = 0; i < src.numel(); ++i) store_from_f64(dst.dtype, dst.data(), static_cast<size_t>(i), value_at(src, i));
}

void set_value(const Tensor& t, int64_t i, double v) { store_from_f64(t.dtype, t.data(), static_cast<size_t>(i), v); }

double nmse(const Tensor& got, const Tensor& want) {
  double err = 0, ref = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = value_at(got, i), w = value_at(want, i);
    err += (g - w) * (g - w);
    ref += w * w;
  }
  if (std::isnan(err)) return INFINITY;
  return ref > 0 ? err / ref : err;
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_TRUE(same_shape(got, want)) << what << ": got " << got.shape_string() << ", want " << want.shape_string();
  const double e = nmse(got, want);
  if (e <= tol) return;
  double sq = 0;
  for (int64_t i = 0; i < want.numel(); ++i) sq += value_at(want, i) * value_at(want, i);
  const double limit = std::sqrt(tol) * std::sqrt(sq / static_cast<double>(std::max<int64_t>(1, want.numel())));
  std::ostringstream os;
  os.precision(9);
  int shown = 0;
  for (int64_t i = 0; i < want.numel() && shown < 10; ++i) {
    const double g = value_at(got, i), w = value_at(want, i);
    if (!(std::abs(g - w) <= limit)) {
      os << "\n  [" << i << "] got " << g << " want " << w;
      ++shown;
    }
  }
  ADD_FAILURE() << what << ": NMSE " << e << " > " << tol << " over " << want.shape_string() << os.str();
}

void expect_equal_ints(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(same_shape(got, want)) << what;
  std::ostringstream os;
  int64_t bad = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = value_at(got, i), w = value_at(want, i);
    if (g != w && bad++ < 10) os << "\n  [" << i << "] got " << g << " want " << w;
  }
  if (bad > 0) ADD_FAILURE() << what << ": " << bad << " of " << want.numel() << " differ" << os.str();
}

std::vector<cpu::IsaLevel> isa_levels() {
  std::vector<cpu::IsaLevel> levels;
  for (cpu::IsaLevel l : {cpu::IsaLevel::kScalar, cpu::IsaLevel::kAvx2, cpu::IsaLevel::kAvx512,
                          cpu::IsaLevel::kAvx512Bf16})
    if (l <= cpu::detected_isa_level()) levels.push_back(l);
  return levels;
}

}  // namespace ft::test
