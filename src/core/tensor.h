// Tensor: a typed, strided view into a shared Buffer. Views never own data beyond their buffer.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "core/buffer.h"
#include "core/dtype.h"

namespace ft {

inline constexpr int kMaxDims = 4;

struct Tensor {
  DType dtype = DType::kF32;
  int ndim = 0;
  std::array<int64_t, kMaxDims> shape{};   // outermost first
  std::array<int64_t, kMaxDims> stride{};  // in elements; innermost is 1 for every op input
  std::shared_ptr<Buffer> buffer;
  size_t offset = 0;  // bytes from buffer->data()

  // A contiguous tensor over `buffer` at `offset`.
  static Tensor make(DType dtype, std::initializer_list<int64_t> shape, std::shared_ptr<Buffer> buffer,
                     size_t offset = 0);
  static Tensor make(DType dtype, const int64_t* shape, int ndim, std::shared_ptr<Buffer> buffer,
                     size_t offset = 0);
  // A contiguous host tensor, zero-filled.
  static Result<Tensor> host(DType dtype, std::initializer_list<int64_t> shape);

  bool defined() const { return buffer != nullptr; }
  Device device() const { return buffer ? buffer->device() : kCpuDevice; }
  void* data() const { return static_cast<char*>(buffer->data()) + offset; }
  template <class T>
  T* ptr() const { return reinterpret_cast<T*>(data()); }

  int64_t dim(int i) const { return shape[i < 0 ? ndim + i : i]; }
  int64_t numel() const;
  size_t nbytes() const { return dtype_bytes(dtype, static_cast<size_t>(numel())); }
  bool is_contiguous() const;
  // Rows of the innermost dimension are contiguous (stride 1), outer dims may be strided.
  bool rows_contiguous() const { return ndim == 0 || stride[ndim - 1] == 1; }
  // Number of innermost rows (product of all but the last dim) and the stride between rows,
  // valid when the outer dims collapse into one strided dim.
  int64_t n_rows() const;
  int64_t row_stride() const { return ndim >= 2 ? stride[ndim - 2] : dim(-1); }
  bool rows_uniform() const;  // outer dims collapse into one stride

  // Views.
  Tensor reshape(std::initializer_list<int64_t> shape) const;   // needs contiguity
  Tensor slice(int dim, int64_t start, int64_t length) const;   // along one dim
  Tensor select(int dim, int64_t index) const;                  // drops the dim

  std::string shape_string() const;  // "[2, 3] bf16"
};

bool same_shape(const Tensor& a, const Tensor& b);

}  // namespace ft
