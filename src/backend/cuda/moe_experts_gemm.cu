// moe_experts for prompt-sized steps: a grouped GEMM on tensor cores (mma.sync bf16 -> fp32), no host sync, so
// a CUDA graph can replay it too.
//  1. sort: the (token, expert) pairs are counted per expert, the counts scanned into row offsets and 128-row
//     tile offsets, and each pair given a row among its expert's rows; the token rows are gathered there in bf16.
//     f32 activations stay f32 there; the GEMMs split each f32 value in three bf16 parts (hi + mid + lo holds all
//     24 mantissa bits) and run one MMA per part, so f32 steps keep fp32 accuracy at three times the MMA work.
//  2. gate_up: one block per (128-row tile of one expert, 64 intermediate columns) multiplies the expert's rows by
//     64 gate rows and the matching 64 up rows of the expert's weights, and stores silu(gate) * up (activation
//     dtype).
//  3. down: one block per (tile, 128 output columns) multiplies those rows by the expert's down rows, fp32 out.
//  4. combine: every token's k down outputs summed with the router weights in pair order (fp32).
// The grid is sized from host-known shapes (pairs / 128 + experts tiles at most); blocks past the last tile exit.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/mma.cuh"
#include "backend/cuda/moe_experts_gemm.cuh"
#include "backend/cuda/vec_load.cuh"

namespace ft::cuda {
namespace {

constexpr int kBM = 128, kBN = 128, kBK = 32, kStages = 3, kThreads = 256;
constexpr int kLds = kBK + 8;  // padded smem row (80 bytes): the 8 rows an ldmatrix reads hit distinct banks

size_t align256(size_t b) { return (b + 255) / 256 * 256; }

// counts[e] = pairs routed to e (ids outside [0, n_expert) go nowhere).
__global__ void count_kernel(const int32_t* ids, int64_t ld, int64_t n, int64_t k, int64_t n_expert, int32_t* counts) {
  const int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (p >= n * k) return;
  const int32_t e = ids[p / k * ld + p % k];
  if (e >= 0 && e < n_expert) atomicAdd(&counts[e], 1);
}

// One thread: offsets = exclusive scan of counts, cursor = offsets, tiles = exclusive scan of ceil(counts / kBM).
__global__ void scan_kernel(const int32_t* counts, int64_t n_expert, int32_t* offsets, int32_t* cursor,
                            int32_t* tiles) {
  if (threadIdx.x != 0) return;
  int32_t at = 0, tile = 0;
  for (int64_t e = 0; e < n_expert; ++e) {
    offsets[e] = cursor[e] = at;
    tiles[e] = tile;
    at += counts[e];
    tile += (counts[e] + kBM - 1) / kBM;
  }
  offsets[n_expert] = at;
  tiles[n_expert] = tile;
}

// position[p] = the pair's row among the sorted rows; token_of[row] = its token. Rows of one expert are in no
// particular order: a row's GEMM result does not depend on its neighbours.
__global__ void place_kernel(const int32_t* ids, int64_t ld, int64_t n, int64_t k, int64_t n_expert, int32_t* cursor,
                             int32_t* position, int32_t* token_of) {
  const int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (p >= n * k) return;
  const int32_t e = ids[p / k * ld + p % k];
  if (e < 0 || e >= n_expert) {
    position[p] = -1;
    return;
  }
  const int32_t row = atomicAdd(&cursor[e], 1);
  position[p] = row;
  token_of[row] = static_cast<int32_t>(p / k);
}

// xg[row, :] = x[token_of[row], :] (rows of 16 bytes, the activation dtype kept).
template <class TX>
__global__ void gather_kernel(const TX* x, int64_t ldx, const int32_t* token_of, const int32_t* total, TX* xg,
                              int64_t d) {
  const int64_t row = blockIdx.x;
  if (row >= *total) return;
  const uint4* src = reinterpret_cast<const uint4*>(x + int64_t{token_of[row]} * ldx);
  uint4* dst = reinterpret_cast<uint4*>(xg + row * d);
  for (int64_t c = threadIdx.x; c < d * int64_t{sizeof(TX)} / 16; c += blockDim.x) dst[c] = src[c];
}

struct GroupedArgs {
  const void* a;              // [rows, k] TA, sorted by expert
  const bf16* w;              // expert e's [*, k] weight rows at w + e * w_stride
  int64_t w_stride;
  const int32_t* offsets;     // [n_expert + 1] first row of each expert
  const int32_t* tiles;       // [n_expert + 1] first 128-row tile of each expert
  int64_t n_expert, n, k;     // n: output columns (gate_up: the intermediate size; the weights hold 2 n rows)
  void* out;                  // gate_up: act TA [rows, n]; down: y f32 [rows, n]
};

// A tile in shared memory: bf16 rows padded to 40 elements (80 bytes: the 8 rows an ldmatrix reads hit distinct
// banks); f32 rows padded to 40 floats (the float2 reads of a half warp hit distinct banks).
template <class TA>
constexpr int kLdsA = kBK + 8;
template <class TA>
constexpr size_t smem_bytes() {
  return size_t{kStages} * (kBM * kLdsA<TA> * sizeof(TA) + kBN * kLds * sizeof(bf16));
}

// The A fragment (rows r, r + 8 of the warp's 16, k columns kk ..) of an f32 tile, split in three bf16 parts
// hi + mid + lo that hold all 24 mantissa bits.
__device__ __forceinline__ void split_fragment(const float* t, int ld, int r, int c, uint32_t (&hi)[4],
                                               uint32_t (&mid)[4], uint32_t (&lo)[4]) {
  const float2 v[4] = {*reinterpret_cast<const float2*>(t + r * ld + c),
                       *reinterpret_cast<const float2*>(t + (r + 8) * ld + c),
                       *reinterpret_cast<const float2*>(t + r * ld + c + 8),
                       *reinterpret_cast<const float2*>(t + (r + 8) * ld + c + 8)};
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

// Block tile: 128 rows x 128 weight rows, k in steps of 32 through a 3-stage cp.async pipeline. Warp w computes
// rows 64 (w / 4) .. +64 and tile columns 32 (w % 4) .. +32: 4 x 4 mma tiles of 16 x 8. In the SwiGLU form, the
// warp's tile columns 0-15 are gate rows i0 + 16 (w % 4) .. +16 and columns 16-31 the up rows of the same i, so
// each thread holds matching gate and up sums. f32 rows (TA float) take three MMAs per tile, one per bf16 part.
template <bool kSwiglu, class TA>
__global__ void __launch_bounds__(kThreads) grouped_gemm_kernel(GroupedArgs g) {
  constexpr int kLdA = kLdsA<TA>, kAChunks = kBK * int{sizeof(TA)} / 16;  // 16-byte chunks per A tile row
  extern __shared__ __align__(128) unsigned char smem_raw[];
  TA* sa = reinterpret_cast<TA*>(smem_raw);                                           // [kStages][kBM][kLdA]
  bf16* sb = reinterpret_cast<bf16*>(smem_raw + size_t{kStages} * kBM * kLdA * sizeof(TA));  // [kStages][kBN][kLds]
  const int64_t tile = blockIdx.y;
  if (tile >= g.tiles[g.n_expert]) return;
  int64_t lo = 0, hi = g.n_expert - 1;  // the expert whose tiles hold `tile`: last e with tiles[e] <= tile
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (g.tiles[mid] <= tile) lo = mid;
    else hi = mid - 1;
  }
  const int64_t e = lo, row0 = g.offsets[e] + (tile - g.tiles[e]) * kBM;
  const int rows = static_cast<int>(std::min<int64_t>(kBM, g.offsets[e + 1] - row0));
  const int64_t col0 = blockIdx.x * int64_t{kSwiglu ? kBN / 2 : kBN};
  const TA* a = static_cast<const TA*>(g.a);
  const bf16* w = g.w + e * g.w_stride;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, wm = warp / 4, wn = warp % 4;

  // Weight row of smem tile row r (or -1 past the output columns).
  auto weight_row = [&](int r) -> int64_t {
    if (!kSwiglu) return col0 + r < g.n ? col0 + r : -1;
    const int64_t i = col0 + 16 * (r / 32) + r % 16;
    return i < g.n ? (r % 32 < 16 ? i : g.n + i) : -1;
  };
  auto load_stage = [&](int stage, int64_t k0) {
    for (int c = tid; c < kBM * kAChunks; c += kThreads) {
      const int r = c / kAChunks, col = c % kAChunks * (16 / int{sizeof(TA)});
      const bool ok = r < rows && k0 + col < g.k;
      cp_async16(sa + (stage * kBM + r) * kLdA + col, a + (ok ? (row0 + r) * g.k + k0 + col : 0), ok ? 16 : 0);
    }
    for (int c = tid; c < kBN * (kBK / 8); c += kThreads) {
      const int r = c / (kBK / 8), col = c % (kBK / 8) * 8;
      const int64_t src_row = weight_row(r);
      const bool ok = src_row >= 0 && k0 + col < g.k;
      cp_async16(sb + (stage * kBN + r) * kLds + col, w + (ok ? src_row * g.k + k0 + col : 0), ok ? 16 : 0);
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
    const TA* ta = sa + (kt % kStages) * kBM * kLdA;
    const bf16* tb = sb + (kt % kStages) * kBN * kLds;
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      uint32_t fb[4][2];
#pragma unroll
      for (int nj = 0; nj < 2; ++nj) {
        uint32_t r[4];
        ldmatrix_x4(r, tb + (32 * wn + 16 * nj + lane % 8 + lane / 16 * 8) * kLds + kk + lane / 8 % 2 * 8);
        fb[2 * nj][0] = r[0], fb[2 * nj][1] = r[1], fb[2 * nj + 1][0] = r[2], fb[2 * nj + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        if constexpr (sizeof(TA) == 2) {
          uint32_t fa[4];
          ldmatrix_x4(fa, ta + (64 * wm + 16 * mi + lane % 16) * kLdA + kk + lane / 16 * 8);
#pragma unroll
          for (int ni = 0; ni < 4; ++ni) mma_bf16_16816(acc[mi][ni], fa, fb[ni][0], fb[ni][1]);
        } else {
          uint32_t fh[4], fm[4], fl[4];
          split_fragment(ta, kLdA, 64 * wm + 16 * mi + lane / 4, kk + 2 * (lane % 4), fh, fm, fl);
#pragma unroll
          for (int ni = 0; ni < 4; ++ni) {
            mma_bf16_16816(acc[mi][ni], fl, fb[ni][0], fb[ni][1]);
            mma_bf16_16816(acc[mi][ni], fm, fb[ni][0], fb[ni][1]);
            mma_bf16_16816(acc[mi][ni], fh, fb[ni][0], fb[ni][1]);
          }
        }
      }
    }
  }
  cp_async_wait<0>();

  const int gr = lane / 4, tc = 2 * (lane % 4);
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = 64 * wm + 16 * mi + gr + 8 * half;
      if (r >= rows) continue;
      if constexpr (kSwiglu) {
        TA* out = static_cast<TA*>(g.out) + (row0 + r) * g.n;
#pragma unroll
        for (int ni = 0; ni < 2; ++ni)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int64_t i = col0 + 16 * wn + 8 * ni + tc + j;
            const float gate = acc[mi][ni][2 * half + j], up = acc[mi][ni + 2][2 * half + j];
            if (i < g.n) out[i] = from_f32<TA>(gate / (1.0f + expf(-gate)) * up);
          }
      } else {
        float* out = static_cast<float*>(g.out) + (row0 + r) * g.n;
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int64_t c = col0 + 32 * wn + 8 * ni + tc + j;
            if (c < g.n) out[c] = acc[mi][ni][2 * half + j];
          }
      }
    }
}

// out[t, :] = sum_j weights[t, j] * y[position[t k + j], :], j in order.
template <class TO>
__global__ void combine_rows_kernel(const float* y, const int32_t* position, const float* weights, int64_t w_ld,
                                    int64_t k, int64_t d, TO* out, int64_t ldo) {
  const int64_t t = blockIdx.x;
  for (int64_t r = threadIdx.x; r < d; r += blockDim.x) {
    float acc = 0.0f;
    for (int64_t j = 0; j < k; ++j) {
      const int32_t row = position[t * k + j];
      if (row >= 0) acc += weights[t * w_ld + j] * y[int64_t{row} * d + r];
    }
    out[t * ldo + r] = from_f32<TO>(acc);
  }
}

// The sorted rows xg [P, d] (activation dtype) share their space with the down outputs y [P, d] f32, written
// once gate_up has read xg; act [P, inter] (activation dtype).
struct Layout {
  int32_t *counts, *offsets, *cursor, *tiles, *position, *token_of;
  void *xg, *act;
  float* y;
  static size_t bytes(int64_t pairs, int64_t n_expert, int64_t d, int64_t inter) {
    const size_t p = static_cast<size_t>(pairs), e = static_cast<size_t>(n_expert + 1);
    return 256 + 4 * align256(4 * e) + 2 * align256(4 * p) + align256(4 * p * static_cast<size_t>(d)) +
           align256(4 * p * static_cast<size_t>(inter));
  }
  Layout(void* base, int64_t pairs, int64_t n_expert, int64_t d, int64_t inter) {
    auto at = (reinterpret_cast<uintptr_t>(base) + 255) / 256 * 256;
    auto take = [&](size_t b) {
      void* r = reinterpret_cast<void*>(at);
      at += align256(b);
      return r;
    };
    const size_t p = static_cast<size_t>(pairs), e = static_cast<size_t>(n_expert + 1);
    counts = static_cast<int32_t*>(take(4 * e));
    offsets = static_cast<int32_t*>(take(4 * e));
    cursor = static_cast<int32_t*>(take(4 * e));
    tiles = static_cast<int32_t*>(take(4 * e));
    position = static_cast<int32_t*>(take(4 * p));
    token_of = static_cast<int32_t*>(take(4 * p));
    y = static_cast<float*>(take(4 * p * static_cast<size_t>(d)));
    xg = y;
    act = take(4 * p * static_cast<size_t>(inter));
  }
};

template <bool kSwiglu, class TA>
cudaError_t launch_grouped(const GroupedArgs& g, int64_t pairs, cudaStream_t st) {
  constexpr size_t smem = smem_bytes<TA>();
  static const cudaError_t attr = cudaFuncSetAttribute(
      grouped_gemm_kernel<kSwiglu, TA>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (attr != cudaSuccess) return attr;
  const int64_t cols = kSwiglu ? kBN / 2 : kBN;
  const dim3 grid(static_cast<unsigned>((g.n + cols - 1) / cols),
                  static_cast<unsigned>((pairs + kBM - 1) / kBM + g.n_expert));
  grouped_gemm_kernel<kSwiglu, TA><<<grid, kThreads, smem, st>>>(g);
  return cudaGetLastError();
}

}  // namespace

size_t moe_experts_gemm_workspace_bytes(int64_t n_tokens, int64_t k, int64_t d, int64_t inter) {
  return Layout::bytes(n_tokens * k, kGemmMaxExperts, d, inter);
}

bool moe_experts_gemm_applies(const Tensor& x, const Tensor& gate_up, const Tensor& down, int64_t n, int64_t d) {
  const size_t xs = dtype_bytes(x.dtype, 1);
  return n > kGemmMinTokens && gate_up.dtype == DType::kBF16 && gate_up.dim(0) <= kGemmMaxExperts && d % 8 == 0 &&
         gate_up.dim(1) % 16 == 0 && gate_up.stride[0] % 8 == 0 && down.stride[0] % 8 == 0 &&
         (x.stride[0] * static_cast<int64_t>(xs)) % 16 == 0 && aligned16(x.data()) && aligned16(gate_up.data()) &&
         aligned16(down.data());
}

Status moe_experts_gemm(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                        const Tensor& down, const Tensor& out, const Tensor& workspace, Stream& s) {
  const int64_t n = x.dim(0), d = x.dim(1), k = ids.dim(1), n_expert = gate_up.dim(0), inter = down.dim(2);
  const int64_t pairs = n * k;
  if (pairs + kBM * n_expert > 65535LL * kBM) return shape_error("moe_experts", "too many pairs for one grouped GEMM");
  const Layout l(workspace.data(), pairs, kGemmMaxExperts, d, inter);
  const cudaStream_t st = cuda_stream(s).get();
  FT_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(l.counts, 0, 4 * static_cast<size_t>(n_expert + 1), st), "memset"));
  const unsigned blocks = grid_for(pairs, 256);
  count_kernel<<<blocks, 256, 0, st>>>(ids.ptr<const int32_t>(), ids.stride[0], n, k, n_expert, l.counts);
  scan_kernel<<<1, 32, 0, st>>>(l.counts, n_expert, l.offsets, l.cursor, l.tiles);
  place_kernel<<<blocks, 256, 0, st>>>(ids.ptr<const int32_t>(), ids.stride[0], n, k, n_expert, l.cursor, l.position,
                                       l.token_of);
  cudaError_t err = cudaSuccess;
  with_type(x.dtype, [&](auto tx) {
    using TA = decltype(tx);
    gather_kernel<TA><<<static_cast<unsigned>(pairs), 128, 0, st>>>(x.ptr<const TA>(), x.stride[0], l.token_of,
                                                                     l.offsets + n_expert, static_cast<TA*>(l.xg), d);
    const GroupedArgs gu{l.xg, gate_up.ptr<const bf16>(), gate_up.stride[0], l.offsets, l.tiles, n_expert, inter, d,
                         l.act};
    err = launch_grouped<true, TA>(gu, pairs, st);
    const GroupedArgs dn{l.act, down.ptr<const bf16>(), down.stride[0], l.offsets, l.tiles, n_expert, d, inter, l.y};
    if (err == cudaSuccess) err = launch_grouped<false, TA>(dn, pairs, st);
  });
  FT_RETURN_IF_ERROR(cuda_status(err, "moe_experts (grouped GEMM)"));
  with_type(out.dtype, [&](auto to) {
    using TO = decltype(to);
    combine_rows_kernel<TO><<<static_cast<unsigned>(n), 256, 0, st>>>(l.y, l.position, weights.ptr<const float>(),
                                                                       weights.stride[0], k, d, out.ptr<TO>(),
                                                                       out.stride[0]);
  });
  return launch_status("moe_experts (combine)");
}

}  // namespace ft::cuda
