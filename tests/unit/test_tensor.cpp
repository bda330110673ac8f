// Tensor views: shapes, strides and byte offsets of slice/select/reshape checked element by element
// against the row-major index formula.
#include <gtest/gtest.h>

#include "core/tensor.h"

namespace ft {
namespace {

// A [2, 3, 4, 5] f32 tensor whose element (a, b, c, d) holds its row-major index.
Tensor iota4() {
  auto t = Tensor::host(DType::kF32, {2, 3, 4, 5});
  EXPECT_TRUE(t.ok());
  for (int i = 0; i < 120; ++i) t->ptr<float>()[i] = static_cast<float>(i);
  return t.value();
}

float at(const Tensor& t, std::initializer_list<int64_t> idx) {
  int64_t off = 0;
  int d = 0;
  for (int64_t i : idx) off += i * t.stride[d++];
  return t.ptr<float>()[off];
}

TEST(Tensor, ContiguousStridesAndSizes) {
  Tensor t = iota4();
  EXPECT_EQ(t.ndim, 4);
  EXPECT_EQ(t.stride[0], 60);
  EXPECT_EQ(t.stride[1], 20);
  EXPECT_EQ(t.stride[2], 5);
  EXPECT_EQ(t.stride[3], 1);
  EXPECT_EQ(t.numel(), 120);
  EXPECT_EQ(t.nbytes(), 480u);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.n_rows(), 24);
  EXPECT_EQ(t.dim(-1), 5);
  EXPECT_EQ(t.shape_string(), "[2, 3, 4, 5] f32");
}

TEST(Tensor, SliceKeepsStridesAndMovesTheOffset) {
  Tensor t = iota4();
  Tensor s = t.slice(2, 1, 2);  // [2, 3, 2, 5]
  EXPECT_EQ(s.shape_string(), "[2, 3, 2, 5] f32");
  EXPECT_EQ(s.offset, 5u * 4);
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_TRUE(s.rows_contiguous());
  EXPECT_FALSE(s.rows_uniform());
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 2; ++c)
        for (int d = 0; d < 5; ++d) EXPECT_EQ(at(s, {a, b, c, d}), a * 60 + b * 20 + (c + 1) * 5 + d);
  Tensor outer = t.slice(0, 1, 1);
  EXPECT_TRUE(outer.is_contiguous());
  EXPECT_EQ(outer.offset, 60u * 4);
  Tensor last = t.slice(-1, 2, 3);  // negative dims count from the end
  EXPECT_EQ(last.shape_string(), "[2, 3, 4, 3] f32");
  EXPECT_EQ(at(last, {1, 2, 3, 0}), 60 + 40 + 15 + 2);
}

TEST(Tensor, SelectDropsTheDim) {
  Tensor t = iota4();
  Tensor s = t.select(1, 2);  // [2, 4, 5]
  EXPECT_EQ(s.shape_string(), "[2, 4, 5] f32");
  EXPECT_EQ(s.stride[0], 60);
  EXPECT_EQ(s.stride[1], 5);
  EXPECT_EQ(s.stride[2], 1);
  EXPECT_EQ(s.offset, 40u * 4);
  EXPECT_TRUE(s.rows_uniform() == false);
  for (int a = 0; a < 2; ++a)
    for (int c = 0; c < 4; ++c)
      for (int d = 0; d < 5; ++d) EXPECT_EQ(at(s, {a, c, d}), a * 60 + 40 + c * 5 + d);
  Tensor row = t.select(0, 1).select(0, 2).select(0, 3);  // [5]
  EXPECT_EQ(row.ndim, 1);
  EXPECT_EQ(row.offset, (60u + 40 + 15) * 4);
  EXPECT_EQ(row.shape[1], 0);
  Tensor scalar = row.select(0, 4);
  EXPECT_EQ(scalar.ndim, 0);
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(*scalar.ptr<float>(), 119.0f);
}

TEST(Tensor, ReshapeOfAContiguousView) {
  Tensor t = iota4();
  Tensor r = t.slice(0, 1, 1).reshape({12, 5});
  EXPECT_EQ(r.shape_string(), "[12, 5] f32");
  EXPECT_EQ(r.stride[0], 5);
  EXPECT_EQ(r.offset, 240u);
  EXPECT_EQ(at(r, {11, 4}), 119.0f);
  EXPECT_EQ(r.buffer, t.buffer);
}

TEST(Tensor, RowsUniformForASliceOfRows) {
  Tensor t = Tensor::host(DType::kBF16, {6, 8}).value();
  Tensor s = t.slice(1, 0, 4);  // rows of 4 with stride 8
  EXPECT_TRUE(s.rows_uniform());
  EXPECT_EQ(s.row_stride(), 8);
  EXPECT_EQ(s.n_rows(), 6);
  Tensor x = Tensor::host(DType::kF32, {2, 3, 8}).value().slice(1, 0, 2);  // [2, 2, 8], strides 24, 8
  EXPECT_FALSE(x.rows_uniform());
}

TEST(Tensor, SubByteSlices) {
  Tensor t = Tensor::host(DType::kF4E2M1, {4, 6}).value();
  EXPECT_EQ(t.nbytes(), 12u);
  EXPECT_EQ(t.slice(0, 1, 2).offset, 3u);  // 6 nibbles = 3 bytes
  EXPECT_EQ(t.slice(1, 2, 2).offset, 1u);  // 2 nibbles
  EXPECT_DEATH(t.slice(1, 1, 2), "slice splits a byte");
}

TEST(Tensor, OutOfRangeViewsAbort) {
  Tensor t = iota4();
  EXPECT_DEATH(t.slice(0, 1, 2), "");
  EXPECT_DEATH(t.reshape({7, 7}), "element count");
  EXPECT_DEATH(t.slice(1, 0, 2).reshape({80}), "non-contiguous");
}

}  // namespace
}  // namespace ft
