// Tensor view construction, shape queries and slicing.
#include "core/tensor.h"

#include "core/check.h"

namespace ft {

Tensor Tensor::make(DType dtype, const int64_t* shape, int ndim, std::shared_ptr<Buffer> buffer,
                    size_t offset) {
  FT_CHECK(ndim >= 0 && ndim <= kMaxDims);
  Tensor t;
  t.dtype = dtype;
  t.ndim = ndim;
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    t.shape[i] = shape[i];
    t.stride[i] = s;
    s *= shape[i];
  }
  t.buffer = std::move(buffer);
  t.offset = offset;
  return t;
}

Tensor Tensor::make(DType dtype, std::initializer_list<int64_t> shape, std::shared_ptr<Buffer> buffer,
                    size_t offset) {
  return make(dtype, shape.begin(), static_cast<int>(shape.size()), std::move(buffer), offset);
}

Result<Tensor> Tensor::host(DType dtype, std::initializer_list<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  FT_ASSIGN_OR_RETURN(auto buf, allocate_host(dtype_bytes(dtype, static_cast<size_t>(n))));
  return make(dtype, shape, std::move(buf));
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

bool Tensor::is_contiguous() const {
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    if (shape[i] != 1 && stride[i] != s) return false;
    s *= shape[i];
  }
  return true;
}

int64_t Tensor::n_rows() const {
  int64_t n = 1;
  for (int i = 0; i + 1 < ndim; ++i) n *= shape[i];
  return n;
}

bool Tensor::rows_uniform() const {
  for (int i = 0; i + 2 < ndim; ++i)
    if (shape[i] != 1 && stride[i] != stride[i + 1] * shape[i + 1]) return false;
  return true;
}

Tensor Tensor::reshape(std::initializer_list<int64_t> new_shape) const {
  FT_CHECK_MSG(is_contiguous(), "reshape of a non-contiguous tensor");
  int64_t n = 1;
  for (int64_t d : new_shape) n *= d;
  FT_CHECK_MSG(n == numel(), "reshape changes the element count");
  return make(dtype, new_shape, buffer, offset);
}

Tensor Tensor::slice(int d, int64_t start, int64_t length) const {
  if (d < 0) d += ndim;
  FT_CHECK(d >= 0 && d < ndim && start >= 0 && length >= 0 && start + length <= shape[d]);
  Tensor t = *this;
  t.shape[d] = length;
  const size_t elem_offset = static_cast<size_t>(start * stride[d]);
  FT_CHECK_MSG(dtype_bits(dtype) % 8 == 0 || elem_offset % 2 == 0, "slice splits a byte");
  t.offset += dtype_bytes(dtype, elem_offset);
  return t;
}

Tensor Tensor::select(int d, int64_t index) const {
  if (d < 0) d += ndim;
  Tensor t = slice(d, index, 1);
  for (int i = d; i + 1 < ndim; ++i) {
    t.shape[i] = t.shape[i + 1];
    t.stride[i] = t.stride[i + 1];
  }
  t.ndim = ndim - 1;
  t.shape[t.ndim] = 0;
  t.stride[t.ndim] = 0;
  return t;
}

std::string Tensor::shape_string() const {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "] " + dtype_name(dtype);
}

bool same_shape(const Tensor& a, const Tensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int i = 0; i < a.ndim; ++i)
    if (a.shape[i] != b.shape[i]) return false;
  return true;
}

}  // namespace ft
