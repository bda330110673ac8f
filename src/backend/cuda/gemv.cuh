// The decode GEMV of 1..4 rows, shared by matmul and add_rms_norm_matmul: one warp per weight row, 16-byte loads,
// fp32 sums; a programmatic dependent (pdl.cuh) whose warps load the first chunks of their weight rows before
// waiting for the kernel before.
#pragma once

#include "backend/cuda/common.cuh"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/vec_load.cuh"

namespace ft::cuda {

inline constexpr int kGemvMaxRows = 4;
inline constexpr int kGemvWarps = 8;

struct GemvArgs {
  const void* x;  // [N, k], row stride ldx
  int64_t ldx;
  const void* w;  // [m, k], row stride ldw
  int64_t ldw;
  void* out;  // [N, m], row stride ldo
  int64_t ldo, m, k;
  bool x_staged = false;       // gemv_kernel, N = 1: x copied into dynamic shared memory first
  const void* bias = nullptr;  // [m], added to the fp32 sums before out's rounding, or null
  bool bias_bf16 = false;

  void set_bias(const Tensor& b) {  // f32/bf16 [m], or undefined
    bias = b.defined() ? b.data() : nullptr;
    bias_bf16 = b.dtype == DType::kBF16;
  }
};

// Weight row j as seen by one lane: chunks c = lane + 32 u of 8 elements, B of them in flight before their
// arithmetic. k % 8 == 0, rows 16-byte aligned. kOnce: as a weight read once in the step (Chunk8::load), which is
// what the GEMVs of one-row steps take (batch 1 +2.2% on the H200); in steps of 3 and 4 rows it cost 2.6-3.6%, whether
// or not the expert GEMVs took it too (the cause is not known, docs/perf.md), so GEMVs of several rows load plainly.
template <class TW, int B, bool kOnce>
struct GemvRow {
  const TW* wr;
  int n_chunks;  // 32-bit chunk indices: registers for the loads
  Chunk8<TW> wc[B];

  __device__ __forceinline__ GemvRow(const GemvArgs& a, int64_t j)
      : wr(static_cast<const TW*>(a.w) + j * a.ldw), n_chunks(static_cast<int>(a.k / 8)) {}
  __device__ __forceinline__ void load_batch(int c0) {
#pragma unroll
    for (int u = 0; u < B; ++u)
      if (c0 + u * 32 < n_chunks) wc[u].load(wr + (c0 + u * 32) * 8, kOnce);
  }
};

// out[r, j] = sum_c x[r, c] w[j, c] (+ bias[j]) for the N rows of x (global or shared memory, row stride ldx), by the
// warp of weight row j whose first batch (chunk lane) row.load_batch has loaded.
template <class TX, class TW, class TO, int N, int B>
__device__ __forceinline__ void gemv_finish_row(const GemvArgs& a, int64_t j, int lane, const TX* x, int64_t ldx,
                                                GemvRow<TW, B, N == 1>& row) {
  float acc[N] = {};
  for (int c0 = lane; c0 < row.n_chunks; c0 += 32 * B) {
    if (c0 != lane) row.load_batch(c0);
#pragma unroll
    for (int u = 0; u < B; ++u) {
      const int c = c0 + u * 32;
      if (c >= row.n_chunks) break;
#pragma unroll
      for (int r = 0; r < N; ++r) {
        float xv[8];
        load8(x + r * ldx + c * 8, xv);
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[r] = fmaf(xv[i], row.wc[u].get(i), acc[r]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < N; ++r) {
    float v = warp_sum(acc[r]);
    if (lane != 0) continue;
    if (a.bias)
      v += a.bias_bf16 ? __bfloat162float(static_cast<const bf16*>(a.bias)[j]) : static_cast<const float*>(a.bias)[j];
    static_cast<TO*>(a.out)[r * a.ldo + j] = from_f32<TO>(v);
  }
}

// One warp per weight row j: out[r, j] = sum_c x[r, c] w[j, c] for the N rows of x. The first B chunks of each
// lane are loaded before waiting for the kernel before (weights are no kernel's output, pdl.cuh), so the weights
// of a GEMV launched behind a short kernel are on their way while that kernel runs.
// A one-row GEMV given x_staged (and k * sizeof(TX) bytes of dynamic shared memory) first copies x there, a 16-byte
// load per thread and round: its warps, whose weight rows are already in registers, then read x at shared-memory
// latency instead of a few L2 round trips each (Qwen3-30B's o_proj on the H200: 4.60 -> 3.23 µs a layer, batch 1
// +2.4%, docs/perf.md). The copy is written as a copy of N rows of stride ldx: the plainer one-row loop led ptxas to
// give the whole-row kernel (B = 16) 146 registers instead of 96, one block an SM instead of two, and batch 1 lost.
template <class TX, class TW, class TO, int N, int B, int MinBlocks = 1>
__global__ void __launch_bounds__(kGemvWarps * 32, MinBlocks) gemv_kernel(GemvArgs a) {
  extern __shared__ uint4 x_staged[];  // [k] of TX when staged
  const int lane = threadIdx.x & 31;
  const int64_t j = blockIdx.x * int64_t{kGemvWarps} + (threadIdx.x >> 5);
  GemvRow<TW, B, N == 1> row(a, j);
  if (j < a.m) row.load_batch(lane);
  pdl_wait_then_release();
  const TX* x = static_cast<const TX*>(a.x);
  int64_t ldx = a.ldx;
  if constexpr (N == 1) {
    if (a.x_staged) {
      const int row_chunks = static_cast<int>(a.k * int64_t{sizeof(TX)} / 16);
      for (int i = threadIdx.x; i < N * row_chunks; i += kGemvWarps * 32)
        x_staged[i] =
            *reinterpret_cast<const uint4*>(x + (i / row_chunks) * ldx + (i % row_chunks) * (16 / sizeof(TX)));
      __syncthreads();
      x = reinterpret_cast<const TX*>(x_staged), ldx = a.k;
    }
  }
  if (j >= a.m) return;
  gemv_finish_row<TX, TW, TO, N>(a, j, lane, x, ldx, row);
}

// Launches Family::kernel<B, MinBlocks> over the m weight rows: a whole 4096-wide bf16 row in flight per lane where
// the registers allow it (rows up to 3072 wide, gpt-oss's 2880, in 12 chunks a lane at 3 blocks an SM: 80 registers
// instead of 96-106 at 2), else 2048 elements at a time; a matrix of up to Family::kOneWaveBlocks blocks per SM in
// one wave, at the registers that leaves, so that every row's first loads go out before the kernel before ends, and
// one of a block more an SM in one wave too with half the chunks in flight (larger ones, lm_head, keep their
// registers). The chunks are summed in the same order whatever B. On the H200's 132 SMs the fused norm's one-wave
// forms take 4224 and 5280 rows (64 and 48 registers), so Qwen3-30B's qkv (5120 rows, behind its norm) is one wave of
// 5 blocks an SM instead of 1.6 waves of 3 (batch 1 +3.8%, docs/perf.md); matmul's take 5280 and 6336 rows.
template <class Family, class TW, int N, class... Extra>
cudaError_t launch_gemv_family(const GemvArgs& a, size_t smem, const CudaStream& cs, const Extra&... extra) {
  const auto go = [&](auto kernel) {
    return launch_pdl(cs.pdl(), kernel, dim3(grid_for(a.m, kGemvWarps)), dim3(kGemvWarps * 32), smem, cs.get(), a,
                      extra...);
  };
  constexpr bool kNarrow = sizeof(TW) == 2 && N <= 2;  // few registers per chunk and row
  constexpr int kOneWaveBlocks = Family::kOneWaveBlocks;
  if constexpr (kNarrow) {
    if (a.k > 3072) return go(Family::template kernel<16, 1>);
    if (a.k > 2048) return go(Family::template kernel<12, 3>);
  }
  if constexpr (kNarrow && N == 1) {
    if (a.m <= int64_t{kOneWaveBlocks} * kGemvWarps * cs.n_sm()) return go(Family::template kernel<8, kOneWaveBlocks>);
    if (a.m <= int64_t{kOneWaveBlocks + 1} * kGemvWarps * cs.n_sm())
      return go(Family::template kernel<4, kOneWaveBlocks + 1>);
  }
  constexpr int kBatch = kNarrow ? 8 : 4;
  return go(Family::template kernel<kBatch, 1>);
}

}  // namespace ft::cuda
