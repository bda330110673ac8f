// moe_experts for prompt-sized steps: a grouped GEMM on tensor cores (tc_gemm.cuh), no host sync, so a CUDA graph
// can replay it too.
//  1. sort: the (token, expert) pairs are counted per expert, the counts scanned into row offsets and 128-row
//     tile offsets, and each pair given a row among its expert's rows; the token rows are gathered there in the
//     activation dtype (f32 or bf16); the GEMMs split each f32 value in three bf16 parts (hi + mid + lo holds all 24
//     mantissa bits) and run one MMA per part, so f32 steps keep fp32 accuracy at three times the MMA work.
//  2. gate_up: one block per (128-row tile of one expert, 64 intermediate columns) multiplies the expert's rows by
//     64 gate rows and the matching 64 up rows of the expert's weights, and stores the activation of the two (plus
//     their biases; activation dtype).
//  3. down: one block per (tile, 128 output columns) multiplies those rows by the expert's down rows (plus its
//     bias), fp32 out.
//  4. combine: every token's k down outputs summed with the router weights in pair order (fp32).
// The grid is sized from host-known shapes (pairs / 128 + experts tiles at most); blocks past the last tile exit.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/moe_experts_gemm.cuh"
#include "backend/cuda/tc_gemm.cuh"
#include "backend/cuda/vec_load.cuh"

namespace ft::cuda {
namespace {

size_t align256(size_t b) { return (b + 255) / 256 * 256; }

// counts[e] = pairs routed to e (ids outside [0, n_expert) go nowhere).
__global__ void count_kernel(const int32_t* ids, int64_t ld, int64_t n, int64_t k, int64_t n_expert, int32_t* counts) {
  const int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (p >= n * k) return;
  const int32_t e = ids[p / k * ld + p % k];
  if (e >= 0 && e < n_expert) atomicAdd(&counts[e], 1);
}

// One thread: offsets = exclusive scan of counts, cursor = offsets, tiles = exclusive scan of ceil(counts / 128).
__global__ void scan_kernel(const int32_t* counts, int64_t n_expert, int32_t* offsets, int32_t* cursor,
                            int32_t* tiles) {
  if (threadIdx.x != 0) return;
  int32_t at = 0, tile = 0;
  for (int64_t e = 0; e < n_expert; ++e) {
    offsets[e] = cursor[e] = at;
    tiles[e] = tile;
    at += counts[e];
    tile += static_cast<int32_t>((counts[e] + kTcRows - 1) / kTcRows);
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
                        const Tensor& down, const Tensor& out, const Tensor& workspace, const MoeExpertParams& p,
                        Stream& s) {
  const int64_t n = x.dim(0), d = x.dim(1), k = ids.dim(1), n_expert = gate_up.dim(0), inter = down.dim(2);
  const int64_t pairs = n * k;
  const int64_t row_tiles = (pairs + kTcRows - 1) / kTcRows + n_expert;  // at most; blocks past the last exit
  if (row_tiles > kTcMaxRowTiles) return shape_error("moe_experts", "too many pairs for one grouped GEMM");
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
    // The sorted rows a [P, k_in] by each expert's matrix in wt, n_out columns into out.
    const auto grouped = [&](const void* a, int64_t k_in, const Tensor& wt, const Tensor& bias, int64_t n_out,
                             void* out) {
      return TcGemmArgs{.a = a,
                        .lda = k_in,
                        .w = wt.ptr<const bf16>(),
                        .w_stride = wt.stride[0],
                        .ldw = k_in,
                        .offsets = l.offsets,
                        .tiles = l.tiles,
                        .rows = 0,
                        .n_groups = n_expert,
                        .n = n_out,
                        .k = k_in,
                        .out = out,
                        .ldo = n_out,
                        .bias = bias.defined() ? bias.ptr<const bf16>() : nullptr,
                        .bias_stride = bias.defined() ? bias.stride[0] : 0,
                        .act = p.act};
    };
    err = launch_tc_gemm<true, TA, TA>(grouped(l.xg, d, gate_up, p.gate_up_bias, inter, l.act), row_tiles, st);
    if (err == cudaSuccess)
      err = launch_tc_gemm<false, TA, float>(grouped(l.act, inter, down, p.down_bias, d, l.y), row_tiles, st);
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
