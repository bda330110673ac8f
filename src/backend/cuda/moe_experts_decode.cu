// moe_experts for decode steps (up to kMoeDecodeMaxTokens tokens): fused expert GEMVs, launched as programmatic
// dependents (pdl.cuh). gate_up: one warp per (pair, intermediate row) computes the gate and up dots together and
// stores the activation (silu(gate) * up, or ExpertActivation's other form; the biases added first); down: one block
// per (token, 4 output rows, or row groups of 4 when a token has fewer experts than the block's 8 warps), a warp per
// expert (and row group), the experts' dots summed in order with the router weights (no atomics, a fixed summation
// order), its first weights loaded before gate_up ends. Pairs whose expert id is out of range contribute nothing.
#include <type_traits>

#include "backend/cuda/common.cuh"
#include "backend/cuda/moe_experts_decode.cuh"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/vec_load.cuh"
#include "backend/expert_activation.h"

namespace ft::cuda {
namespace {

constexpr int kWarps = 8;  // the row-wise down kernel's warps per block

template <class TA, class TB>
__device__ __forceinline__ float dot(const TA* a, const TB* b, int64_t len, bool vec, int lane) {
  float acc = 0.0f;
  if (vec) {
    for (int64_t c = lane * 8; c < len; c += 256) {
      Chunk8<TA> ca;
      Chunk8<TB> cb;
      ca.load(a + c);
      cb.load_act(b + c);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc = fmaf(ca.get(i), cb.get(i), acc);
    }
  } else {
    for (int64_t c = lane; c < len; c += 32) acc = fmaf(to_f32(a[c]), to_f32(b[c]), acc);
  }
  return warp_sum(acc);
}

constexpr int kGateUpWarps = 16;
constexpr int kGateUpBatch = 2;   // 16-byte chunks of each of the gate and up bf16 rows in flight per lane
constexpr int kGateUpBlocks = 3;  // blocks an SM: at most 40 registers, 48 warps

// grid (ceil(inter / kGateUpWarps), P), one warp per (pair p, intermediate row i):
// h[p, i] = act(gate[e] row i . x[t] + bias, up[e] row i . x[t] + bias). Each lane keeps kGateUpBatch chunks of both
// rows in flight before their arithmetic (the same chunks in the same order whatever the batch). Many warps with few
// loads each rather than more loads in flight per warp: a token of Qwen3-30B-A3B runs in one wave on the H200 instead
// of 2.33 at 8 chunks (87 registers, 5 blocks an SM): batch 1 +3.6%, batch 4 +6.7%. In few, large blocks, because a
// kernel boundary costs by the blocks of the grid, not their warps (bench_grid_phases on the H200: a chain alternating
// one block with 1584 blocks of 4 warps takes 1.36 µs a kernel, with 396 blocks of 16 warps 0.61): a token's 384
// blocks of 16 warps instead of 1536 of 4, batch 1 +1.4% (docs/perf.md).
template <class TX, class TW, bool kOnce, bool kPlain>
__global__ void __launch_bounds__(kGateUpWarps * 32, kGateUpBlocks) decode_gate_up_kernel(ExpertArgs a) {
  constexpr int kBatch = sizeof(TW) == 2 ? kGateUpBatch : kGateUpBatch / 2;  // f32 chunks take twice the registers
  pdl_wait_then_release();  // the ids (router, cache lookup) and the slots (cache fill) may be the kernel before's
  const int lane = threadIdx.x & 31;
  const int64_t i = blockIdx.x * int64_t{kGateUpWarps} + (threadIdx.x >> 5), p = blockIdx.y, t = p / a.k;
  if (i >= a.inter) return;
  const int64_t e = a.ids[t * a.ids_ld + p % a.k];
  if (e < 0 || e >= a.n_expert) return;
  const TX* x = static_cast<const TX*>(a.x) + t * a.ldx;
  const TW* gate = static_cast<const TW*>(a.gate_up) + e * a.gu_stride + i * a.d;
  const TW* up = gate + a.inter * a.d;
  float g = 0.0f, u = 0.0f;
  if (a.vec) {
    const int64_t n_chunks = a.d / 8;
    for (int64_t c0 = lane; c0 < n_chunks; c0 += 32 * kBatch) {
      Chunk8<TW> cg[kBatch], cu[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int64_t c = c0 + 32 * b;
        if (c < n_chunks) cg[b].load(gate + c * 8, kOnce), cu[b].load(up + c * 8, kOnce);
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int64_t c = c0 + 32 * b;
        if (c >= n_chunks) break;
        Chunk8<TX> cx;
        cx.load_act(x + c * 8);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          g = fmaf(cx.get(j), cg[b].get(j), g);
          u = fmaf(cx.get(j), cu[b].get(j), u);
        }
      }
    }
  } else {
    for (int64_t c = lane; c < a.d; c += 32) {
      const float xv = to_f32(x[c]);
      g = fmaf(xv, to_f32(gate[c]), g);
      u = fmaf(xv, to_f32(up[c]), u);
    }
  }
  g = warp_sum(g);
  u = warp_sum(u);
  if (lane != 0) return;
  if constexpr (kPlain) {
    a.h[p * a.inter + i] = expert_activation(ExpertActivation{}, g, u);
  } else {
    a.h[p * a.inter + i] = expert_activation(a.act, plus_bias<TW>(g, a.gu_bias, a.gu_bias_stride, e, i),
                                             plus_bias<TW>(u, a.gu_bias, a.gu_bias_stride, e, a.inter + i));
  }
}

constexpr int kDownWarps = 8;
constexpr int kDownRows = 4;   // output rows per block
constexpr int kDownMaxK = 32;  // experts per token the block-per-rows down kernel takes
// 16-byte chunks of each bf16 row in flight per lane, and blocks an SM: one-token steps keep 4 (a whole row up to 1024
// wide) at 2 blocks an SM; steps of several tokens keep 3 (a whole 768-wide row, Qwen3-30B-A3B's) at 3 blocks an SM
// (80 registers), so that 4 tokens' 2048 blocks take 5.2 waves instead of 7.8 (H200: batch 4 +2.4%, batch 3 after an
// 8192-token prompt +1.9%; one-token steps lost 0.7% this way, docs/perf.md). So do one-token steps of row groups
// (kGrouped): gpt-oss-20b's 360 blocks are one wave at 3 an SM, 1.4 at 2. The chunks are summed in the same order
// either way. f32 weights take half the chunks, rounded down (twice the registers each; 2 at 80 registers spill).
template <bool kOnce, bool kGrouped>
inline constexpr int kDownBatch = kOnce && !kGrouped ? 4 : 3;
template <bool kOnce, bool kGrouped>
inline constexpr int kDownBlocks = kOnce && !kGrouped ? 2 : 3;

// Row groups of a down block: with fewer experts per token than warps (kGrouped), the warps take several groups of
// kDownRows rows (gpt-oss's 4 experts: two groups), so that none idles; a warp's work stays one expert's kDownRows
// rows.
__host__ __device__ inline int down_row_groups(int64_t k) {
  return k > 0 && k < kDownWarps ? static_cast<int>(kDownWarps / k) : 1;
}

// grid (ceil(d / (G kDownRows)), n), G = down_row_groups(k), one block per (token t, G kDownRows output rows r):
// out[t, r] = sum_j weights[t, j] * (down[e_j] row r . h[t k + j] + bias[e_j, r]). With G = 1 warp w takes experts
// j = w, w + kDownWarps, ...; with G > 1 warp w takes expert w % k of row group w / k. A lane reads the same columns of
// its rows, so its h chunks serve every row. The per-expert dots are summed in expert order (no atomics: a fixed
// order). Each warp loads its first batch of weights before waiting for gate_up: the ids come from the router two
// launches back (pdl.cuh), so the weights are on their way during gate_up's last blocks.
template <class TW, class TO, bool kOnce, bool kPlain, bool kGrouped>
__global__ void __launch_bounds__(kDownWarps * 32, kDownBlocks<kOnce, kGrouped>) decode_down_kernel(ExpertArgs a) {
  __shared__ float part[kDownMaxK * kDownRows];  // [k][G kDownRows]: each expert's weighted dots
  constexpr int kBatch = sizeof(TW) == 2 ? kDownBatch<kOnce, kGrouped> : kDownBatch<kOnce, kGrouped> / 2;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int groups = kGrouped ? down_row_groups(a.k) : 1, group = kGrouped ? warp / static_cast<int>(a.k) : 0;
  const int block_rows = groups * kDownRows;
  const int64_t b0 = blockIdx.x * int64_t{block_rows}, r0 = b0 + group * kDownRows, t = blockIdx.y;
  const int64_t n_chunks = a.inter / 8, rows = std::clamp<int64_t>(a.d - r0, 0, kDownRows);
  const int64_t j_first = kGrouped ? warp % a.k : warp, j_step = kGrouped ? a.k : kDownWarps;
  const auto expert_of = [&](int64_t j) { return a.ids[t * a.ids_ld + j]; };
  const auto expert_rows = [&](int64_t j) -> const TW* {  // rows r0.. of expert j's down matrix, null if skipped
    const int64_t e = expert_of(j);
    return e < 0 || e >= a.n_expert || rows == 0 ? nullptr
                                                 : static_cast<const TW*>(a.down) + e * a.down_stride + r0 * a.inter;
  };
  Chunk8<TW> cw[kDownRows][kBatch];
  const auto load_batch = [&](const TW* w, int64_t c0) {
#pragma unroll
    for (int r = 0; r < kDownRows; ++r)
#pragma unroll
      for (int b = 0; b < kBatch; ++b)
        if (r < rows && c0 + 32 * b < n_chunks) cw[r][b].load(w + r * a.inter + (c0 + 32 * b) * 8, kOnce);
  };
  const bool active = group < groups;
  const TW* first = active && j_first < a.k ? expert_rows(j_first) : nullptr;
  if (first) load_batch(first, lane);
  pdl_wait_then_release();  // h comes from gate_up
  for (int64_t j = j_first; active && j < a.k; j += j_step) {
    const TW* w = j == j_first ? first : expert_rows(j);
    float acc[kDownRows] = {};
    if (w) {
      const float* h = a.h + (t * a.k + j) * a.inter;
      for (int64_t c0 = lane; c0 < n_chunks; c0 += 32 * kBatch) {
        if (j != j_first || c0 != lane) load_batch(w, c0);
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          if (c0 + 32 * b >= n_chunks) break;
          Chunk8<float> ch;
          ch.load_act(h + (c0 + 32 * b) * 8);
#pragma unroll
          for (int r = 0; r < kDownRows; ++r)
#pragma unroll
            for (int i = 0; i < 8; ++i) acc[r] = fmaf(cw[r][b].get(i), ch.get(i), acc[r]);
        }
      }
    }
    const float wj = a.weights[t * a.weights_ld + j];
#pragma unroll
    for (int r = 0; r < kDownRows; ++r) {
      const float v = warp_sum(acc[r]);
      if (lane != 0) continue;
      float y = 0.0f;
      if constexpr (kPlain) {
        if (w) y = wj * v;
      } else {
        if (w && r < rows) y = wj * plus_bias<TW>(v, a.down_bias, a.down_bias_stride, expert_of(j), r0 + r);
      }
      part[j * block_rows + group * kDownRows + r] = y;
    }
  }
  __syncthreads();
  if (threadIdx.x < block_rows && b0 + threadIdx.x < a.d) {
    float sum = 0.0f;
    for (int64_t j = 0; j < a.k; ++j) sum += part[j * block_rows + threadIdx.x];
    static_cast<TO*>(a.out)[t * a.ldo + b0 + threadIdx.x] = from_f32<TO>(sum);
  }
}

// Unaligned shapes or more than kDownMaxK experts per token: one warp per (token, output row).
template <class TW, class TO>
__global__ void __launch_bounds__(kWarps * 32) decode_down_rowwise_kernel(ExpertArgs a) {
  pdl_wait_then_release();
  const int lane = threadIdx.x & 31;
  const int64_t r = blockIdx.x * int64_t{kWarps} + (threadIdx.x >> 5), t = blockIdx.y;
  if (r >= a.d) return;
  float acc = 0.0f;
  for (int64_t j = 0; j < a.k; ++j) {
    const int64_t e = a.ids[t * a.ids_ld + j];
    if (e < 0 || e >= a.n_expert) continue;
    const TW* row = static_cast<const TW*>(a.down) + e * a.down_stride + r * a.inter;
    acc +=
        a.weights[t * a.weights_ld + j] * plus_bias<TW>(dot(row, a.h + (t * a.k + j) * a.inter, a.inter, a.vec, lane),
                                                        a.down_bias, a.down_bias_stride, e, r);
  }
  if (lane == 0) static_cast<TO*>(a.out)[t * a.ldo + r] = from_f32<TO>(acc);
}

}  // namespace

cudaError_t launch_moe_experts_decode(const ExpertArgs& a, DType x, DType w, DType out, const CudaStream& cs) {
  const unsigned pairs = static_cast<unsigned>(a.n * a.k), n = static_cast<unsigned>(a.n);
  cudaError_t err = cudaSuccess;
  // A one-token step reads its experts' rows as weights read once (Chunk8::load), as the GEMVs of one row do theirs;
  // steps of more tokens load plainly (gemv.cuh's GemvRow says why).
  // Experts without biases and with the plain SwiGLU (Qwen's, DeepSeek's) take kernels compiled without those paths:
  // the bias's expert id kept live through gate_up's loop cost Qwen3-30B-A3B's batch-1 decode 2% on the H200.
  const bool plain = !a.gu_bias && !a.down_bias && a.act.kind == ExpertActivation::kSwiglu;
  const auto go = [&](auto once, auto plain_t) {
    constexpr bool kOnce = decltype(once)::value, kPlain = decltype(plain_t)::value;
    with_type(w, [&](auto tw) {
      using TW = decltype(tw);
      with_type(x, [&](auto tx) {
        err = launch_pdl(cs.pdl(), decode_gate_up_kernel<decltype(tx), TW, kOnce, kPlain>,
                         dim3(grid_for(a.inter, kGateUpWarps), pairs), dim3(kGateUpWarps * 32), 0, cs.get(), a);
      });
      if (err != cudaSuccess) return;
      with_type(out, [&](auto to) {
        using TO = decltype(to);
        if (a.vec && a.k <= kDownMaxK)
          err = launch_pdl(cs.pdl(),
                           down_row_groups(a.k) > 1 ? decode_down_kernel<TW, TO, kOnce, kPlain, true>
                                                    : decode_down_kernel<TW, TO, kOnce, kPlain, false>,
                           dim3(grid_for(a.d, kDownRows * down_row_groups(a.k)), n), dim3(kDownWarps * 32), 0, cs.get(),
                           a);
        else
          err = launch_pdl(cs.pdl(), decode_down_rowwise_kernel<TW, TO>, dim3(grid_for(a.d, kWarps), n),
                           dim3(kWarps * 32), 0, cs.get(), a);
      });
    });
  };
  const auto go_plain = [&](auto once) { plain ? go(once, std::true_type{}) : go(once, std::false_type{}); };
  if (a.n == 1)
    go_plain(std::true_type{});
  else
    go_plain(std::false_type{});
  return err;
}

}  // namespace ft::cuda
