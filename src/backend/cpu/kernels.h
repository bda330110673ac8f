// The vectorised inner loops every CPU op is built from, one table per instruction-set level.
#pragma once

#include <cstdint>

#include "backend/cpu/isa.h"

namespace ft::cpu {

// A dot-product tile: up to kTileX activation rows against up to kTileW weight rows.
inline constexpr int kTileX = 4;
inline constexpr int kTileW = 4;

struct CpuKernels {
  // out[i * kTileW + j] = sum_t xs[i][t] * w[j * w_stride + t] for i < nx <= kTileX, j < nw <= kTileW,
  // accumulated in fp32. xs: nx rows of k f32; w: nw rows of k weights (f32 or bf16).
  void (*dot_tile_f32)(const float* const* xs, int nx, const float* w, int64_t w_stride, int nw, int64_t k,
                       float* out);
  void (*dot_tile_bf16)(const float* const* xs, int nx, const uint16_t* w, int64_t w_stride, int nw,
                        int64_t k, float* out);
  // The same over nw rows of MXFP4 weights (io/mxfp4.h), k a multiple of 32: row j's k / 32 groups of 16 code bytes
  // at blocks + j * row_bytes, their ue8m0 scales at scales + j * scale_stride.
  void (*dot_tile_mxfp4)(const float* const* xs, int nx, const uint8_t* blocks, int64_t row_bytes,
                         const uint8_t* scales, int64_t scale_stride, int nw, int64_t k, float* out);
  // y[t] += a * x[t].
  void (*axpy_f32)(float a, const float* x, float* y, int64_t n);
  void (*axpy_bf16)(float a, const uint16_t* x, float* y, int64_t n);
  // sum_t x[t]^2 in fp32.
  float (*sum_squares)(const float* x, int64_t n);
  // out[t] = x[t] * s * w[t], or x[t] * s * (1 + w[t]) when zero_centered (1 + w formed in fp32).
  void (*scale_mul_f32)(const float* x, float s, const float* w, bool zero_centered, float* out, int64_t n);
  void (*scale_mul_bf16)(const float* x, float s, const uint16_t* w, bool zero_centered, float* out, int64_t n);
  // out[t] = silu(g[t]) * u[t] = g[t] / (1 + exp(-g[t])) * u[t] (vector exp, about 1 ulp).
  void (*silu_mul)(const float* g, const float* u, float* out, int64_t n);
  // out[t] = exp(x[t] - m); returns the fp32 sum of out (out may alias x).
  float (*exp_sub)(const float* x, float m, float* out, int64_t n);
  // out[t] = a[t] + b[t].
  void (*add)(const float* a, const float* b, float* out, int64_t n);
  // Exact widening; rounding to nearest even (NaN stays NaN).
  void (*bf16_to_f32)(const uint16_t* x, float* out, int64_t n);
  void (*f32_to_bf16)(const float* x, uint16_t* out, int64_t n);
};

// The table of one level (the level must run on this machine).
const CpuKernels& scalar_kernels();
const CpuKernels& avx2_kernels();
const CpuKernels& avx512_kernels();
const CpuKernels& avx512bf16_kernels();

// The table of the active level (isa_level()).
const CpuKernels& kernels();

}  // namespace ft::cpu
