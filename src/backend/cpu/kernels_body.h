// The inner loops of kernels.h written once over a SIMD traits type S; each kernels_*.cpp instantiates them.
//
// S provides: V (a vector of S::kW floats), zero(), set1(f), load(const float*), load(const uint16_t*) (bf16
// widened exactly by a 16-bit shift), store(float*, V), fma(a, b, c) = a * b + c, mul, add, div, exp (about
// 1 ulp, may use exp_poly below), sum(V) (fp32), mxfp4_weights(codes, scale, V* out) (one MXFP4 group: its 16
// code bytes, low nibble first, as 32 / kW vectors of value times scale, exact, in an order of the level's choice) and
// mxfp4_x(const float* x, V* out) (32 floats as vectors in that order),
// and kHasBf16Store with store_bf16(uint16_t*, V) (round to nearest even) when the level narrows in vectors.
// Include this header only from one .cpp per level, after defining S in an anonymous namespace. Everything here
// has internal linkage so that no function compiled for one level is linked into another level's callers.
#pragma once

#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels.h"

namespace ft::cpu {
namespace {

float widen(float v) { return v; }
float widen(uint16_t v) {
  const uint32_t u = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// f32 -> bf16, round to nearest even, NaN stays NaN (as core/dtype.h).
uint16_t narrow_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// The last n < S::kW elements of a row, zero padded.
template <class S, class T>
typename S::V load_tail(const T* p, int64_t n) {
  alignas(64) T tmp[S::kW] = {};
  std::memcpy(tmp, p, static_cast<size_t>(n) * sizeof(T));
  return S::load(tmp);
}

// Writes the first n < S::kW lanes of v.
template <class S>
void store_tail(float* p, typename S::V v, int64_t n) {
  alignas(64) float tmp[S::kW];
  S::store(tmp, v);
  std::memcpy(p, tmp, static_cast<size_t>(n) * sizeof(float));
}

// exp(r) for |r| <= ln2 / 2: Cephes' expf polynomial.
template <class S>
typename S::V exp_poly(typename S::V r) {
  typename S::V p = S::set1(1.9875691500e-4f);
  p = S::fma(p, r, S::set1(1.3981999507e-3f));
  p = S::fma(p, r, S::set1(8.3334519073e-3f));
  p = S::fma(p, r, S::set1(4.1665795894e-2f));
  p = S::fma(p, r, S::set1(1.6666665459e-1f));
  p = S::fma(p, r, S::set1(5.0000001201e-1f));
  return S::add(S::fma(p, S::mul(r, r), r), S::set1(1.0f));
}

template <class S>
typename S::V silu_mul_v(typename S::V g, typename S::V u) {
  const typename S::V one = S::set1(1.0f);
  return S::mul(S::div(g, S::add(one, S::exp(S::mul(S::set1(-1.0f), g)))), u);
}

template <class S>
void silu_mul(const float* g, const float* u, float* out, int64_t n) {
  int64_t t = 0;
  for (; t + S::kW <= n; t += S::kW) S::store(out + t, silu_mul_v<S>(S::load(g + t), S::load(u + t)));
  if (t < n) store_tail<S>(out + t, silu_mul_v<S>(load_tail<S>(g + t, n - t), load_tail<S>(u + t, n - t)), n - t);
}

template <class S>
float exp_sub(const float* x, float m, float* out, int64_t n) {
  const typename S::V mv = S::set1(m);
  typename S::V acc = S::zero();
  int64_t t = 0;
  for (; t + S::kW <= n; t += S::kW) {
    const typename S::V e = S::exp(S::add(S::load(x + t), S::mul(S::set1(-1.0f), mv)));
    S::store(out + t, e);
    acc = S::add(acc, e);
  }
  float sum = S::sum(acc);
  if (t < n) {
    store_tail<S>(out + t, S::exp(S::add(load_tail<S>(x + t, n - t), S::mul(S::set1(-1.0f), mv))), n - t);
    for (; t < n; ++t) sum += out[t];
  }
  return sum;
}

// Weight rows for the dot-product tiles: dense f32 or bf16 rows `stride` elements apart, or MXFP4 rows.
template <class W>
struct DenseRows {
  const W* w;
  int64_t stride;
};
struct Mxfp4Rows {
  const uint8_t* blocks;
  int64_t row_bytes;
  const uint8_t* scales;
  int64_t scale_stride;
};

// ue8m0 scale code -> 2^(code - 127) (code 0 is the subnormal 2^-127; 0xff is NaN), as core/dtype.h decodes it.
float e8m0_scale(uint8_t code) {
  const uint32_t bits = code == 0 ? 0x00400000u : code == 0xff ? 0x7fc00000u : static_cast<uint32_t>(code) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <class S, int NX, int NW, class W>
void dot_tile_fixed(const float* const* xs, const DenseRows<W>& rows, int64_t k, float* out) {
  using V = typename S::V;
  const W* w = rows.w;
  const int64_t ws = rows.stride;
  V acc[NX][NW];
  for (int i = 0; i < NX; ++i)
    for (int j = 0; j < NW; ++j) acc[i][j] = S::zero();
  // The tile's NW rows are one block of memory (ws == k in a dense matrix) read as NW interleaved streams,
  // which the hardware prefetchers follow poorly for short rows; so the next tile's block is prefetched
  // linearly, in step with this tile's progress.
  const char* next = reinterpret_cast<const char*>(w + NW * ws);
  constexpr int64_t kStepBytes = NW * S::kW * static_cast<int64_t>(sizeof(W));
  int64_t t = 0;
  for (; t + S::kW <= k; t += S::kW) {
    for (int64_t b = 0; b < kStepBytes; b += 64) __builtin_prefetch(next + t * NW * static_cast<int64_t>(sizeof(W)) + b);
    V wv[NW];
    for (int j = 0; j < NW; ++j) wv[j] = S::load(w + j * ws + t);
    for (int i = 0; i < NX; ++i) {
      const V xv = S::load(xs[i] + t);
      for (int j = 0; j < NW; ++j) acc[i][j] = S::fma(xv, wv[j], acc[i][j]);
    }
  }
  if (t < k) {
    V wv[NW];
    for (int j = 0; j < NW; ++j) wv[j] = load_tail<S>(w + j * ws + t, k - t);
    for (int i = 0; i < NX; ++i) {
      const V xv = load_tail<S>(xs[i] + t, k - t);
      for (int j = 0; j < NW; ++j) acc[i][j] = S::fma(xv, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < NX; ++i)
    for (int j = 0; j < NW; ++j) out[i * kTileW + j] = S::sum(acc[i][j]);
}

// MXFP4 rows a group of 32 at a time: the group of each x row arranged once (S::mxfp4_x), each row's group decoded
// once (S::mxfp4_weights) and taken against every x row. The next tile's rows (NW rows of row_bytes, one block in a
// packed matrix) are prefetched in step, as above.
template <class S, int NX, int NW>
void dot_tile_fixed(const float* const* xs, const Mxfp4Rows& rows, int64_t k, float* out) {
  using V = typename S::V;
  constexpr int kVectors = 32 / S::kW;  // vectors a group
  V acc[NX][NW];
  for (int i = 0; i < NX; ++i)
    for (int j = 0; j < NW; ++j) acc[i][j] = S::zero();
  const char* next = reinterpret_cast<const char*>(rows.blocks + NW * rows.row_bytes);
  for (int64_t g = 0; g < k / 32; ++g) {
    if (g % 4 == 0)
      for (int j = 0; j < NW; ++j) __builtin_prefetch(next + j * 64 + g * NW * 16);
    V xv[NX][kVectors];
    for (int i = 0; i < NX; ++i) S::mxfp4_x(xs[i] + g * 32, xv[i]);
    for (int j = 0; j < NW; ++j) {
      V wv[kVectors];
      S::mxfp4_weights(rows.blocks + j * rows.row_bytes + g * 16, e8m0_scale(rows.scales[j * rows.scale_stride + g]),
                       wv);
      for (int i = 0; i < NX; ++i)
        for (int c = 0; c < kVectors; ++c) acc[i][j] = S::fma(xv[i][c], wv[c], acc[i][j]);
    }
  }
  for (int i = 0; i < NX; ++i)
    for (int j = 0; j < NW; ++j) out[i * kTileW + j] = S::sum(acc[i][j]);
}

template <class S, int NX, class Rows>
void dot_tile_nx(const float* const* xs, const Rows& rows, int nw, int64_t k, float* out) {
  switch (nw) {
    case 1:
      return dot_tile_fixed<S, NX, 1>(xs, rows, k, out);
    case 2:
      return dot_tile_fixed<S, NX, 2>(xs, rows, k, out);
    case 3:
      return dot_tile_fixed<S, NX, 3>(xs, rows, k, out);
    default:
      return dot_tile_fixed<S, NX, 4>(xs, rows, k, out);
  }
}

template <class S, class Rows>
void dot_tile_rows(const float* const* xs, int nx, const Rows& rows, int nw, int64_t k, float* out) {
  switch (nx) {
    case 1:
      return dot_tile_nx<S, 1>(xs, rows, nw, k, out);
    case 2:
      return dot_tile_nx<S, 2>(xs, rows, nw, k, out);
    case 3:
      return dot_tile_nx<S, 3>(xs, rows, nw, k, out);
    default:
      return dot_tile_nx<S, 4>(xs, rows, nw, k, out);
  }
}

template <class S, class W>
void dot_tile(const float* const* xs, int nx, const W* w, int64_t ws, int nw, int64_t k, float* out) {
  dot_tile_rows<S>(xs, nx, DenseRows<W>{w, ws}, nw, k, out);
}

template <class S>
void dot_tile_mxfp4(const float* const* xs, int nx, const uint8_t* blocks, int64_t row_bytes, const uint8_t* scales,
                    int64_t scale_stride, int nw, int64_t k, float* out) {
  dot_tile_rows<S>(xs, nx, Mxfp4Rows{blocks, row_bytes, scales, scale_stride}, nw, k, out);
}

template <class S, class W>
void axpy(float a, const W* x, float* y, int64_t n) {
  const typename S::V av = S::set1(a);
  int64_t t = 0;
  for (; t + S::kW <= n; t += S::kW) S::store(y + t, S::fma(av, S::load(x + t), S::load(y + t)));
  for (; t < n; ++t) y[t] += a * widen(x[t]);
}

template <class S>
float sum_squares(const float* x, int64_t n) {
  typename S::V acc0 = S::zero(), acc1 = S::zero();
  int64_t t = 0;
  for (; t + 2 * S::kW <= n; t += 2 * S::kW) {
    const typename S::V a = S::load(x + t), b = S::load(x + t + S::kW);
    acc0 = S::fma(a, a, acc0);
    acc1 = S::fma(b, b, acc1);
  }
  for (; t + S::kW <= n; t += S::kW) {
    const typename S::V a = S::load(x + t);
    acc0 = S::fma(a, a, acc0);
  }
  if (t < n) {
    const typename S::V a = load_tail<S>(x + t, n - t);
    acc1 = S::fma(a, a, acc1);
  }
  return S::sum(S::add(acc0, acc1));
}

template <class S, class W>
void scale_mul(const float* x, float s, const W* w, bool zero_centered, float* out, int64_t n) {
  const typename S::V sv = S::set1(s), one = S::set1(zero_centered ? 1.0f : 0.0f);
  const float one_s = zero_centered ? 1.0f : 0.0f;
  int64_t t = 0;
  for (; t + S::kW <= n; t += S::kW)
    S::store(out + t, S::mul(S::mul(S::load(x + t), sv), S::add(one, S::load(w + t))));
  for (; t < n; ++t) out[t] = x[t] * s * (one_s + widen(w[t]));
}

template <class S>
void add(const float* a, const float* b, float* out, int64_t n) {
  int64_t t = 0;
  for (; t + S::kW <= n; t += S::kW) S::store(out + t, S::add(S::load(a + t), S::load(b + t)));
  for (; t < n; ++t) out[t] = a[t] + b[t];
}

template <class S>
void bf16_to_f32_row(const uint16_t* x, float* out, int64_t n) {
  int64_t t = 0;
  for (; t + S::kW <= n; t += S::kW) S::store(out + t, S::load(x + t));
  for (; t < n; ++t) out[t] = widen(x[t]);
}

template <class S>
void f32_to_bf16_row(const float* x, uint16_t* out, int64_t n) {
  int64_t t = 0;
  if constexpr (S::kHasBf16Store)
    for (; t + S::kW <= n; t += S::kW) S::store_bf16(out + t, S::load(x + t));
  for (; t < n; ++t) out[t] = narrow_bf16(x[t]);
}

template <class S>
CpuKernels make_kernels() {
  CpuKernels k{};
  k.dot_tile_f32 = &dot_tile<S, float>;
  k.dot_tile_bf16 = &dot_tile<S, uint16_t>;
  k.dot_tile_mxfp4 = &dot_tile_mxfp4<S>;
  k.axpy_f32 = &axpy<S, float>;
  k.axpy_bf16 = &axpy<S, uint16_t>;
  k.sum_squares = &sum_squares<S>;
  k.scale_mul_f32 = &scale_mul<S, float>;
  k.scale_mul_bf16 = &scale_mul<S, uint16_t>;
  k.add = &add<S>;
  k.silu_mul = &silu_mul<S>;
  k.exp_sub = &exp_sub<S>;
  k.bf16_to_f32 = &bf16_to_f32_row<S>;
  k.f32_to_bf16 = &f32_to_bf16_row<S>;
  return k;
}

}  // namespace
}  // namespace ft::cpu
