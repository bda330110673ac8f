// tc_gemm.cuh's GEMM: a block multiplies 128 rows of a by 128 weight rows, k in steps of 32 through a 3-stage cp.async
// pipeline, 8 warps of 64 x 32 outputs (4 x 4 MMA tiles of 16 x 8).
#include "backend/cuda/mma.cuh"
#include "backend/cuda/tc_gemm.cuh"
#include "backend/expert_activation.h"

namespace ft::cuda {
namespace {

constexpr int kBM = static_cast<int>(kTcRows), kBN = 128, kBK = 32, kStages = 3, kThreads = 256;
constexpr int kLds = kBK + 8;

// A tile in shared memory: bf16 rows padded to 40 elements (80 bytes: the 8 rows an ldmatrix reads hit distinct
// banks); f32 rows padded to 40 floats (the float2 reads of a half warp hit distinct banks).
template <class TA>
constexpr size_t smem_bytes() {
  return size_t{kStages} * (kBM * kLds * sizeof(TA) + kBN * kLds * sizeof(bf16));
}

// The A fragment (rows r, r + 8 of the warp's 16, k columns c ..) of an f32 tile, split in three bf16 parts
// hi + mid + lo that hold all 24 mantissa bits.
__device__ __forceinline__ void split_fragment(const float* t, int ld, int r, int c, uint32_t (&hi)[4],
                                               uint32_t (&mid)[4], uint32_t (&lo)[4]) {
  const float2 v[4] = {
      *reinterpret_cast<const float2*>(t + r * ld + c), *reinterpret_cast<const float2*>(t + (r + 8) * ld + c),
      *reinterpret_cast<const float2*>(t + r * ld + c + 8), *reinterpret_cast<const float2*>(t + (r + 8) * ld + c + 8)};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float x = v[i].x, y = v[i].y;
    const __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
    x -= __low2float(h), y -= __high2float(h);
    const __nv_bfloat162 m = __floats2bfloat162_rn(x, y);
    x -= __low2float(m), y -= __high2float(m);
    hi[i] = *reinterpret_cast<const uint32_t*>(&h);
    mid[i] = *reinterpret_cast<const uint32_t*>(&m);
    lo[i] = pack_bf16x2(x, y);
  }
}

// Warp w computes rows 64 (w / 4) .. +64 and tile columns 32 (w % 4) .. +32. In the gated form, the warp's tile
// columns 0-15 are gate rows i0 + 16 (w % 4) .. +16 and columns 16-31 the up rows of the same i, so each thread
// holds matching gate and up sums. f32 rows take three MMAs per tile, one per bf16 part, into accumulators that
// start at zero for every 32-wide k step and are then added to the running sums in fp32: the MMA's own
// accumulation truncates, which over the whole k of a long row biases the sum past fp32 rounding.
template <bool kGated, class TA, class TO>
__global__ void __launch_bounds__(kThreads) tc_gemm_kernel(TcGemmArgs g) {
  constexpr int kAChunks = kBK * int{sizeof(TA)} / 16;  // 16-byte chunks per A tile row
  extern __shared__ __align__(128) unsigned char smem_raw[];
  TA* sa = reinterpret_cast<TA*>(smem_raw);                                                  // [kStages][kBM][kLds]
  bf16* sb = reinterpret_cast<bf16*>(smem_raw + size_t{kStages} * kBM * kLds * sizeof(TA));  // [kStages][kBN][kLds]
  const int64_t tile = blockIdx.y;
  int64_t e = 0, row0 = tile * kBM, row_end = g.rows;
  if (g.offsets) {
    if (tile >= g.tiles[g.n_groups]) return;
    int64_t lo = 0, hi = g.n_groups - 1;  // the group whose tiles hold `tile`: last e with tiles[e] <= tile
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (g.tiles[mid] <= tile)
        lo = mid;
      else
        hi = mid - 1;
    }
    e = lo, row0 = g.offsets[e] + (tile - g.tiles[e]) * kBM, row_end = g.offsets[e + 1];
  }
  const int rows = static_cast<int>(std::min<int64_t>(kBM, row_end - row0));
  const int64_t col0 = blockIdx.x * int64_t{kGated ? kBN / 2 : kBN};
  const TA* a = static_cast<const TA*>(g.a);
  const bf16* w = g.w + e * g.w_stride;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, wm = warp / 4, wn = warp % 4;

  // Weight row of smem tile row r (or -1 past the output columns).
  auto weight_row = [&](int r) -> int64_t {
    if (!kGated) return col0 + r < g.n ? col0 + r : -1;
    const int64_t i = col0 + 16 * (r / 32) + r % 16;
    return i < g.n ? (r % 32 < 16 ? i : g.n + i) : -1;
  };
  auto load_stage = [&](int stage, int64_t k0) {
    for (int c = tid; c < kBM * kAChunks; c += kThreads) {
      const int r = c / kAChunks, col = c % kAChunks * (16 / int{sizeof(TA)});
      const bool ok = r < rows && k0 + col < g.k;
      cp_async16(sa + (stage * kBM + r) * kLds + col, a + (ok ? (row0 + r) * g.lda + k0 + col : 0), ok ? 16 : 0);
    }
    for (int c = tid; c < kBN * (kBK / 8); c += kThreads) {
      const int r = c / (kBK / 8), col = c % (kBK / 8) * 8;
      const int64_t src_row = weight_row(r);
      const bool ok = src_row >= 0 && k0 + col < g.k;
      cp_async16(sb + (stage * kBN + r) * kLds + col, w + (ok ? src_row * g.ldw + k0 + col : 0), ok ? 16 : 0);
    }
  };
  // The B fragments of k columns kk .. kk + 15 for the warp's 4 n8 tiles.
  auto load_b = [&](const bf16* tb, int kk, uint32_t(&fb)[4][2]) {
#pragma unroll
    for (int nj = 0; nj < 2; ++nj) {
      uint32_t r[4];
      ldmatrix_x4(r, tb + (32 * wn + 16 * nj + lane % 8 + lane / 16 * 8) * kLds + kk + lane / 8 % 2 * 8);
      fb[2 * nj][0] = r[0], fb[2 * nj][1] = r[1], fb[2 * nj + 1][0] = r[2], fb[2 * nj + 1][1] = r[3];
    }
  };

  float acc[4][4][4] = {};
  const int64_t n_k = (g.k + kBK - 1) / kBK;
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < n_k) load_stage(s, s * kBK);
    cp_async_commit();
  }
  for (int64_t kt = 0; kt < n_k; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // stage kt is in; every warp is done with the stage the next load overwrites
    if (kt + kStages - 1 < n_k) load_stage(static_cast<int>((kt + kStages - 1) % kStages), (kt + kStages - 1) * kBK);
    cp_async_commit();
    const TA* ta = sa + (kt % kStages) * kBM * kLds;
    const bf16* tb = sb + (kt % kStages) * kBN * kLds;
    if constexpr (sizeof(TA) == 2) {
#pragma unroll
      for (int kk = 0; kk < kBK; kk += 16) {
        uint32_t fb[4][2];
        load_b(tb, kk, fb);
#pragma unroll
        for (int mi = 0; mi < 4; ++mi) {
          uint32_t fa[4];
          ldmatrix_x4(fa, ta + (64 * wm + 16 * mi + lane % 16) * kLds + kk + lane / 16 * 8);
#pragma unroll
          for (int ni = 0; ni < 4; ++ni) mma_bf16_16816(acc[mi][ni], fa, fb[ni][0], fb[ni][1]);
        }
      }
    } else {
      uint32_t fb[2][4][2];
      load_b(tb, 0, fb[0]);
      load_b(tb, 16, fb[1]);
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        float step[4][4] = {};  // this k step's sums of row tile mi
#pragma unroll
        for (int ks = 0; ks < 2; ++ks) {
          uint32_t fh[4], fm[4], fl[4];
          split_fragment(ta, kLds, 64 * wm + 16 * mi + lane / 4, 16 * ks + 2 * (lane % 4), fh, fm, fl);
#pragma unroll
          for (int ni = 0; ni < 4; ++ni) {
            mma_bf16_16816(step[ni], fl, fb[ks][ni][0], fb[ks][ni][1]);
            mma_bf16_16816(step[ni], fm, fb[ks][ni][0], fb[ks][ni][1]);
            mma_bf16_16816(step[ni], fh, fb[ks][ni][0], fb[ks][ni][1]);
          }
        }
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[mi][ni][j] += step[ni][j];
      }
    }
  }
  cp_async_wait<0>();

  const int gr = lane / 4, tc = 2 * (lane % 4);
  const bf16* bias = g.bias ? g.bias + e * g.bias_stride : nullptr;
  const auto plus_bias = [&](float v, int64_t i) { return bias ? v + __bfloat162float(bias[i]) : v; };
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = 64 * wm + 16 * mi + gr + 8 * half;
      if (r >= rows) continue;
      if constexpr (kGated) {
        TA* out = static_cast<TA*>(g.out) + (row0 + r) * g.ldo;
#pragma unroll
        for (int ni = 0; ni < 2; ++ni)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int64_t i = col0 + 16 * wn + 8 * ni + tc + j;
            if (i >= g.n) continue;
            const float gate = plus_bias(acc[mi][ni][2 * half + j], i);
            const float up = plus_bias(acc[mi][ni + 2][2 * half + j], g.n + i);
            out[i] = from_f32<TA>(expert_activation(g.act, gate, up));
          }
      } else {
        TO* out = static_cast<TO*>(g.out) + (row0 + r) * g.ldo;
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int64_t c = col0 + 32 * wn + 8 * ni + tc + j;
            if (c < g.n) out[c] = from_f32<TO>(plus_bias(acc[mi][ni][2 * half + j], c));
          }
      }
    }
}

}  // namespace

template <bool kGated, class TA, class TO>
cudaError_t launch_tc_gemm(const TcGemmArgs& g, int64_t row_tiles, cudaStream_t st) {
  constexpr size_t smem = smem_bytes<TA>();
  static const cudaError_t attr = cudaFuncSetAttribute(
      tc_gemm_kernel<kGated, TA, TO>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (attr != cudaSuccess) return attr;
  const int64_t cols = kGated ? kBN / 2 : kBN;
  const dim3 grid(static_cast<unsigned>((g.n + cols - 1) / cols), static_cast<unsigned>(row_tiles));
  tc_gemm_kernel<kGated, TA, TO><<<grid, kThreads, smem, st>>>(g);
  return cudaGetLastError();
}

template cudaError_t launch_tc_gemm<true, bf16, bf16>(const TcGemmArgs&, int64_t, cudaStream_t);
template cudaError_t launch_tc_gemm<true, float, float>(const TcGemmArgs&, int64_t, cudaStream_t);
template cudaError_t launch_tc_gemm<false, bf16, float>(const TcGemmArgs&, int64_t, cudaStream_t);
template cudaError_t launch_tc_gemm<false, float, float>(const TcGemmArgs&, int64_t, cudaStream_t);
template cudaError_t launch_tc_gemm<false, float, bf16>(const TcGemmArgs&, int64_t, cudaStream_t);

}  // namespace ft::cuda
