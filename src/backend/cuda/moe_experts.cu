// moe_experts: the routed experts of a batch, reading expert ids and weights from device memory only (no
// host round trip, so a decode step can be captured in a CUDA graph).
//  decode (n <= kMoeDecodeMaxTokens): fused expert GEMVs, moe_experts_decode.cu.
//  prefill with bf16 expert weights (more than 32 tokens): a grouped GEMM on tensor cores, moe_experts_gemm.cu.
//  prefill otherwise (f32 weights, unaligned shapes): grouped GEMM on CUDA cores. One block per (expert, 64-row
//    weight tile) collects the pairs routed to its expert (a scan of the ids), gathers their rows in tiles of 64
//    and multiplies on CUDA cores in fp32; a last kernel combines each token's k down outputs with the router
//    weights.
// Pairs whose expert id is out of range contribute nothing.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/gemm_simt.cuh"
#include "backend/cuda/moe_experts_decode.cuh"
#include "backend/cuda/moe_experts_gemm.cuh"
#include "backend/cuda/vec_load.cuh"
#include "backend/expert_activation.h"

namespace ft::cuda {
namespace {

size_t align256(size_t b) { return (b + 255) / 256 * 256; }

// The pairs routed to one expert, collected in order by a block-wide scan of the ids, 64 at a time.
struct PairList {
  static constexpr int kCap = kSimtTile + kSimtThreads;
  int32_t pair[kCap];
  int32_t token[kCap];
  int count;
  int warp_total[kSimtThreads / 32];
};

// Scans every pair; calls tile(n_rows) each time 64 pairs (or, at the end, the rest) are in the list.
template <class F>
__device__ void for_each_pair_tile(const ExpertArgs& a, int64_t e, PairList& pl, F&& tile) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t n_pairs = a.n * a.k;
  if (tid == 0) pl.count = 0;
  __syncthreads();
  for (int64_t base = 0; base < n_pairs; base += kSimtThreads) {
    const int64_t p = base + tid;
    const bool match = p < n_pairs && a.ids[p / a.k * a.ids_ld + p % a.k] == e;
    const unsigned ballot = __ballot_sync(0xffffffffu, match);
    if (lane == 0) pl.warp_total[warp] = __popc(ballot);
    __syncthreads();
    int before = pl.count;
    for (int w = 0; w < warp; ++w) before += pl.warp_total[w];
    if (match) {
      const int at = before + __popc(ballot & ((1u << lane) - 1u));
      pl.pair[at] = static_cast<int32_t>(p);
      pl.token[at] = static_cast<int32_t>(p / a.k);
    }
    __syncthreads();
    if (tid == 0)
      for (int w = 0; w < kSimtThreads / 32; ++w) pl.count += pl.warp_total[w];
    __syncthreads();
    while (pl.count >= kSimtTile) {
      tile(kSimtTile);
      const int rest = pl.count - kSimtTile;  // at most kSimtThreads: one move per thread
      int32_t pp = 0, tt = 0;
      if (tid < rest) pp = pl.pair[kSimtTile + tid], tt = pl.token[kSimtTile + tid];
      __syncthreads();
      if (tid < rest) pl.pair[tid] = pp, pl.token[tid] = tt;
      __syncthreads();
      if (tid == 0) pl.count = rest;
      __syncthreads();
    }
  }
  if (pl.count > 0) tile(pl.count);
}

// grid (ceil(inter / 64), n_expert): h rows of the expert's pairs (the activation of gate and up plus their biases),
// 64 intermediate rows per block.
template <class TX, class TW>
__global__ void __launch_bounds__(kSimtThreads) grouped_gate_up_kernel(ExpertArgs a) {
  __shared__ SimtSmem sm;
  __shared__ PairList pl;
  const int64_t i0 = blockIdx.x * int64_t{kSimtTile}, e = blockIdx.y;
  const TW* gate = static_cast<const TW*>(a.gate_up) + e * a.gu_stride + i0 * a.d;
  const TW* up = gate + a.inter * a.d;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  for_each_pair_tile(a, e, pl, [&](int rows) {
    float g[4][4], u[4][4];
    simt_tile(static_cast<const TX*>(a.x), a.ldx, pl.token, rows, gate, a.d, a.inter - i0, a.d, sm, g);
    simt_tile(static_cast<const TX*>(a.x), a.ldx, pl.token, rows, up, a.d, a.inter - i0, a.d, sm, u);
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int row = ty + 16 * r;
        const int64_t i = i0 + tx + 16 * c;
        if (row < rows && i < a.inter)
          a.h[int64_t{pl.pair[row]} * a.inter + i] =
              expert_activation(a.act, plus_bias<TW>(g[r][c], a.gu_bias, a.gu_bias_stride, e, i),
                                plus_bias<TW>(u[r][c], a.gu_bias, a.gu_bias_stride, e, a.inter + i));
      }
  });
}

// grid (ceil(d / 64), n_expert): y rows of the expert's pairs (plus the down bias), 64 output dims per block.
template <class TW>
__global__ void __launch_bounds__(kSimtThreads) grouped_down_kernel(ExpertArgs a) {
  __shared__ SimtSmem sm;
  __shared__ PairList pl;
  const int64_t r0 = blockIdx.x * int64_t{kSimtTile}, e = blockIdx.y;
  const TW* down = static_cast<const TW*>(a.down) + e * a.down_stride + r0 * a.inter;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  for_each_pair_tile(a, e, pl, [&](int rows) {
    float acc[4][4];
    simt_tile(a.h, a.inter, pl.pair, rows, down, a.inter, a.d - r0, a.inter, sm, acc);
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int row = ty + 16 * r;
        const int64_t col = r0 + tx + 16 * c;
        if (row < rows && col < a.d)
          a.y[int64_t{pl.pair[row]} * a.d + col] = plus_bias<TW>(acc[r][c], a.down_bias, a.down_bias_stride, e, col);
      }
  });
}

// out[t, :] = sum_j weights[t, j] * y[t k + j, :], j in order.
template <class TO>
__global__ void combine_kernel(ExpertArgs a) {
  const int64_t t = blockIdx.x;
  for (int64_t r = threadIdx.x; r < a.d; r += blockDim.x) {
    float acc = 0.0f;
    for (int64_t j = 0; j < a.k; ++j) {
      const int64_t e = a.ids[t * a.ids_ld + j];
      if (e >= 0 && e < a.n_expert) acc += a.weights[t * a.weights_ld + j] * a.y[(t * a.k + j) * a.d + r];
    }
    static_cast<TO*>(a.out)[t * a.ldo + r] = from_f32<TO>(acc);
  }
}

}  // namespace

size_t moe_workspace_bytes(int64_t n_tokens, int64_t n_expert_used, int64_t d, int64_t inter) {
  const size_t pairs = static_cast<size_t>(n_tokens * n_expert_used);
  const size_t simt = 256 + align256(pairs * static_cast<size_t>(inter) * 4) + align256(pairs * static_cast<size_t>(d) * 4);
  return n_tokens > kGemmMinTokens ? std::max(simt, moe_experts_gemm_workspace_bytes(n_tokens, n_expert_used, d, inter))
                                   : simt;
}

Status moe_experts(const Tensor& x,          // [n, d] f32/bf16
                   const Tensor& ids,        // [n, k] i32
                   const Tensor& weights,    // [n, k] f32
                   const Tensor& gate_up,    // [n_expert, 2 * inter, d] f32/bf16, contiguous per expert
                   const Tensor& down,       // [n_expert, d, inter] f32/bf16, contiguous per expert
                   const Tensor& out,        // [n, d] f32/bf16
                   const Tensor& workspace,  // moe_workspace_bytes(n, k, d, inter) bytes
                   const MoeExpertParams& p, Stream& s) {
  FT_RETURN_IF_ERROR(device_check(
      "moe_experts", {&x, &ids, &weights, &gate_up, &down, &out, &workspace, &p.gate_up_bias, &p.down_bias}));
  if (!is_fb(x.dtype) || !is_fb(out.dtype)) return dtype_error("moe_experts", "x/out", x);
  if (ids.dtype != DType::kI32 || weights.dtype != DType::kF32) return dtype_error("moe_experts", "ids/weights", ids);
  if (!is_fb(gate_up.dtype) || down.dtype != gate_up.dtype) return dtype_error("moe_experts", "expert weights", gate_up);
  if (p.gate_up_interleaved || p.gate_up_scales.defined() || p.down_scales.defined())
    return unsupported("moe_experts: cuda takes gate rows then up rows, without scales");
  if (x.ndim != 2 || out.ndim != 2 || ids.ndim != 2 || gate_up.ndim != 3 || down.ndim != 3 ||
      !gate_up.select(0, 0).is_contiguous() || !down.select(0, 0).is_contiguous())
    return shape_error("moe_experts", "x/out [n, d], ids [n, k], gate_up/down contiguous per expert expected");
  const int64_t n = x.dim(0), d = x.dim(1), k = ids.dim(1), n_expert = gate_up.dim(0), inter = down.dim(2);
  if (!same_shape(x, out) || ids.dim(0) != n || !same_shape(ids, weights) || gate_up.dim(1) != 2 * inter ||
      gate_up.dim(2) != d || down.dim(0) != n_expert || down.dim(1) != d)
    return shape_error("moe_experts", "x, ids, weights, gate_up, down and out do not match");
  if (!expert_biases_fit(p, gate_up.dtype, n_expert, inter, d))
    return shape_error("moe_experts", "biases must be [n_expert, 2 inter] and [n_expert, d] in the weights' dtype");
  if (!workspace.defined() || workspace.nbytes() < moe_workspace_bytes(n, k, d, inter))
    return shape_error("moe_experts", "workspace smaller than moe_workspace_bytes");
  if (n == 0) return ok_status();
  if (moe_experts_gemm_applies(x, gate_up, down, n, d) &&
      workspace.nbytes() >= moe_experts_gemm_workspace_bytes(n, k, d, inter))
    return moe_experts_gemm(x, ids, weights, gate_up, down, out, workspace, p, s);
  const int64_t pairs = n * k;
  auto base = (reinterpret_cast<uintptr_t>(workspace.data()) + 255) / 256 * 256;
  auto* h = reinterpret_cast<float*>(base);
  auto* y = reinterpret_cast<float*>(base + align256(static_cast<size_t>(pairs * inter) * 4));
  const bool vec = d % 8 == 0 && inter % 8 == 0 && aligned16(x.data()) && aligned16(gate_up.data()) &&
                   aligned16(down.data()) && gate_up.stride[0] % 8 == 0 && down.stride[0] % 8 == 0 &&
                   (x.stride[0] * static_cast<int64_t>(dtype_bytes(x.dtype, 1))) % 16 == 0;
  const ExpertArgs a{x.data(),
                     x.stride[0],
                     ids.ptr<const int32_t>(),
                     ids.stride[0],
                     weights.ptr<const float>(),
                     weights.stride[0],
                     gate_up.data(),
                     down.data(),
                     gate_up.stride[0],
                     down.stride[0],
                     out.data(),
                     out.stride[0],
                     h,
                     y,
                     n,
                     k,
                     d,
                     inter,
                     n_expert,
                     vec,
                     p.act,
                     p.gate_up_bias.defined() ? p.gate_up_bias.data() : nullptr,
                     p.down_bias.defined() ? p.down_bias.data() : nullptr,
                     p.gate_up_bias.defined() ? p.gate_up_bias.stride[0] : 0,
                     p.down_bias.defined() ? p.down_bias.stride[0] : 0};
  const CudaStream& cs = cuda_stream(s);
  const cudaStream_t st = cs.get();
  if (n <= kMoeDecodeMaxTokens)
    return cuda_status(launch_moe_experts_decode(a, x.dtype, gate_up.dtype, out.dtype, cs), "moe_experts");
  if (n_expert > 65535 || pairs > INT32_MAX) return shape_error("moe_experts", "too many experts/pairs");
  with_type(gate_up.dtype, [&](auto tw) {
    using TW = decltype(tw);
    with_type(x.dtype, [&](auto tx) {
      grouped_gate_up_kernel<decltype(tx), TW>
          <<<dim3(grid_for(inter, kSimtTile), static_cast<unsigned>(n_expert)), kSimtThreads, 0, st>>>(a);
    });
    with_type(out.dtype, [&](auto to) {
      grouped_down_kernel<TW>
          <<<dim3(grid_for(d, kSimtTile), static_cast<unsigned>(n_expert)), kSimtThreads, 0, st>>>(a);
      combine_kernel<decltype(to)><<<static_cast<unsigned>(n), 256, 0, st>>>(a);
    });
  });
  return launch_status("moe_experts");
}

}  // namespace ft::cuda
