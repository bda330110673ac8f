// Device side of the CUDA op tests: a cuda backend (or none, when no GPU is present: the tests skip), host
// <-> device copies of harness tensors, and the ref stream the results are checked against.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "backend/backend.h"
#include "core/check.h"
#include "op_harness.h"

namespace ft::test {

struct CudaEnv {
  std::unique_ptr<Backend> be;  // null without a GPU
  HostStream ref_stream{nullptr};
  const OpTable& ref = ref_op_table();

  CudaEnv() {
    auto b = create_backend("cuda");
    if (b.ok()) be = std::move(b).value();
  }
  const OpTable& ops() const { return be->ops(); }
  Stream& stream() const { return be->stream(); }

  // A zero-filled contiguous device tensor.
  Tensor empty(DType dtype, std::initializer_list<int64_t> shape) const {
    auto t = be->empty(dtype, shape);
    FT_CHECK(t.ok());
    return std::move(t).value();
  }
  // A contiguous device copy of a contiguous host tensor.
  Tensor up(const Tensor& host) const {
    FT_CHECK(host.is_contiguous());
    auto buf = be->allocate(host.nbytes());
    FT_CHECK(buf.ok());
    Tensor d = host;
    d.buffer = std::move(buf).value();
    d.offset = 0;
    FT_CHECK(be->copy(host, d).ok());
    return d;
  }
  // A host copy of a contiguous device tensor (after the stream's work is done).
  Tensor down(const Tensor& dev) const {
    FT_CHECK(dev.is_contiguous());
    FT_CHECK(be->stream().synchronize().ok());
    auto buf = allocate_host(dev.nbytes());
    FT_CHECK(buf.ok());
    Tensor h = dev;
    h.buffer = std::move(buf).value();
    h.offset = 0;
    FT_CHECK(be->copy(dev, h).ok());
    FT_CHECK(be->stream().synchronize().ok());
    return h;
  }
};

#define FT_REQUIRE_GPU(env) \
  if (!(env).be) GTEST_SKIP() << "no CUDA device present"

// NMSE bound of a bf16 output: at most two roundings to bf16 (a GEMM's output, then its bias) of 2^-9
// relative each, so (2 * 2^-9)^2 = 1.5e-5 on a single element and about 1e-6 on average over many.
inline constexpr double kBf16Tol = 3e-5;

}  // namespace ft::test
