// Element access for the reference ops: any dtype, any strides, read and written as double.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace ft::ref {

inline int64_t elem_offset(const Tensor& t, int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) {
  const int64_t idx[4] = {i0, i1, i2, i3};
  int64_t off = 0;
  for (int d = 0; d < t.ndim; ++d) off += idx[d] * t.stride[d];
  return off;
}

inline double get(const Tensor& t, int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) {
  return load_as_f64(t.dtype, t.data(), static_cast<size_t>(elem_offset(t, i0, i1, i2, i3)));
}

inline void set(const Tensor& t, double v, int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) {
  store_from_f64(t.dtype, t.data(), static_cast<size_t>(elem_offset(t, i0, i1, i2, i3)), v);
}

inline int64_t get_int(const Tensor& t, int64_t i0, int64_t i1 = 0) {
  return static_cast<int64_t>(get(t, i0, i1));
}

// Views a tensor [..., d] as rows: the row index runs over all outer dims in order.
inline int64_t row_offset(const Tensor& t, int64_t row) {
  int64_t off = 0;
  for (int d = t.ndim - 2; d >= 0; --d) {
    off += (row % t.shape[d]) * t.stride[d];
    row /= t.shape[d];
  }
  return off;
}

inline double get_row(const Tensor& t, int64_t row, int64_t col) {
  return load_as_f64(t.dtype, t.data(), static_cast<size_t>(row_offset(t, row) + col * t.stride[t.ndim - 1]));
}

inline void set_row(const Tensor& t, int64_t row, int64_t col, double v) {
  store_from_f64(t.dtype, t.data(), static_cast<size_t>(row_offset(t, row) + col * t.stride[t.ndim - 1]), v);
}

}  // namespace ft::ref
