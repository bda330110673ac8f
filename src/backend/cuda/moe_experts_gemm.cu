// moe_experts for prompt-sized steps in bf16: the pairs are sorted by expert on the device, their rows gathered,
// and each expert's rows go through two cuBLASLt GEMMs on tensor cores (gate_up, then down after SiLU * up);
// a last kernel sums every token's k outputs with the router weights in pair order (fp32). The per-expert row
// counts come back to the host once per call to size the GEMMs, so this path is for eager prefill steps only;
// decode steps (and f32) keep the fused kernels of moe_experts.cu, which a CUDA graph can replay.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/moe_experts_gemm.cuh"
#include "backend/cuda/vec_load.cuh"

#include <vector>

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

// One block: offsets = exclusive scan of counts (n_expert <= 1024 * 8), cursor = offsets.
__global__ void scan_kernel(const int32_t* counts, int64_t n_expert, int32_t* offsets, int32_t* cursor) {
  if (threadIdx.x != 0) return;
  int32_t at = 0;
  for (int64_t e = 0; e < n_expert; ++e) {
    offsets[e] = at;
    cursor[e] = at;
    at += counts[e];
  }
  offsets[n_expert] = at;
}

// position[p] = the pair's row among its expert's rows; token_of[row] = its token. Rows of one expert are in no
// particular order: each row's GEMM result does not depend on its neighbours.
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

// xg[row, :] = x[token_of[row], :] (bf16 rows, 16 bytes at a time).
__global__ void gather_kernel(const bf16* x, int64_t ldx, const int32_t* token_of, const int32_t* total, bf16* xg,
                              int64_t d) {
  const int64_t row = blockIdx.x;
  if (row >= *total) return;
  const uint4* src = reinterpret_cast<const uint4*>(x + int64_t{token_of[row]} * ldx);
  uint4* dst = reinterpret_cast<uint4*>(xg + row * d);
  for (int64_t c = threadIdx.x; c < d / 8; c += blockDim.x) dst[c] = src[c];
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

struct Layout {
  int32_t *counts, *offsets, *cursor, *position, *token_of;
  bf16 *xg, *h;  // xg [P, d] (then the SiLU * up rows [P, inter]), h [P, 2 inter]
  float* y;      // [P, d]
  static size_t bytes(int64_t pairs, int64_t n_expert, int64_t d, int64_t inter) {
    const size_t p = static_cast<size_t>(pairs), e = static_cast<size_t>(n_expert + 1);
    return 256 + 3 * align256(4 * e) + 2 * align256(4 * p) + align256(2 * p * static_cast<size_t>(d)) +
           align256(4 * p * static_cast<size_t>(inter)) + align256(4 * p * static_cast<size_t>(d));
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
    position = static_cast<int32_t*>(take(4 * p));
    token_of = static_cast<int32_t*>(take(4 * p));
    xg = static_cast<bf16*>(take(2 * p * static_cast<size_t>(d)));
    h = static_cast<bf16*>(take(4 * p * static_cast<size_t>(inter)));
    y = static_cast<float*>(take(4 * p * static_cast<size_t>(d)));
  }
};

// A contiguous [rows, cols] view of the workspace at p.
Tensor view(const Tensor& workspace, void* p, DType dtype, int64_t rows, int64_t cols) {
  Tensor t = workspace;
  t.dtype = dtype;
  t.offset = workspace.offset + static_cast<size_t>(static_cast<char*>(p) - static_cast<char*>(workspace.data()));
  t.ndim = 2;
  t.shape = {rows, cols, 1, 1};
  t.stride = {cols, 1, 1, 1};
  return t;
}

}  // namespace

size_t moe_experts_gemm_workspace_bytes(int64_t n_tokens, int64_t k, int64_t d, int64_t inter) {
  return Layout::bytes(n_tokens * k, kGemmMaxExperts, d, inter);
}

bool moe_experts_gemm_applies(const Tensor& x, const Tensor& gate_up, int64_t n, int64_t d) {
  return n > kGemmMinTokens && x.dtype == DType::kBF16 && gate_up.dtype == DType::kBF16 &&
         gate_up.dim(0) <= kGemmMaxExperts && d % 8 == 0 && x.stride[0] % 8 == 0 && aligned16(x.data());
}

Status moe_experts_gemm(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                        const Tensor& down, const Tensor& out, const Tensor& workspace, Stream& s) {
  const int64_t n = x.dim(0), d = x.dim(1), k = ids.dim(1), n_expert = gate_up.dim(0), inter = down.dim(2);
  const int64_t pairs = n * k;
  const Layout l(workspace.data(), pairs, kGemmMaxExperts, d, inter);
  const cudaStream_t st = cuda_stream(s).get();
  FT_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(l.counts, 0, 4 * static_cast<size_t>(n_expert + 1), st), "memset"));
  const unsigned blocks = grid_for(pairs, 256);
  count_kernel<<<blocks, 256, 0, st>>>(ids.ptr<const int32_t>(), ids.stride[0], n, k, n_expert, l.counts);
  scan_kernel<<<1, 32, 0, st>>>(l.counts, n_expert, l.offsets, l.cursor);
  place_kernel<<<blocks, 256, 0, st>>>(ids.ptr<const int32_t>(), ids.stride[0], n, k, n_expert, l.cursor, l.position,
                                       l.token_of);
  gather_kernel<<<static_cast<unsigned>(pairs), 128, 0, st>>>(x.ptr<const bf16>(), x.stride[0], l.token_of,
                                                               l.offsets + n_expert, l.xg, d);
  FT_RETURN_IF_ERROR(launch_status("moe_experts (sort)"));
  std::vector<int32_t> offsets(static_cast<size_t>(n_expert + 1));
  FT_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(offsets.data(), l.offsets, offsets.size() * 4, cudaMemcpyDeviceToHost, st),
                                 "moe_experts offsets"));
  FT_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(st), "moe_experts offsets"));
  const int64_t rows = offsets.back();
  const Tensor xg = view(workspace, l.xg, DType::kBF16, pairs, d);
  const Tensor h = view(workspace, l.h, DType::kBF16, pairs, 2 * inter);
  const Tensor act = view(workspace, l.xg, DType::kBF16, pairs, inter);  // reuses xg once gate_up has read it
  const Tensor y = view(workspace, l.y, DType::kF32, pairs, d);
  for (int64_t e = 0; e < n_expert; ++e) {
    const int64_t r0 = offsets[static_cast<size_t>(e)], cnt = offsets[static_cast<size_t>(e) + 1] - r0;
    if (cnt > 0) FT_RETURN_IF_ERROR(matmul(xg.slice(0, r0, cnt), gate_up.select(0, e), Tensor{}, h.slice(0, r0, cnt), s));
  }
  if (rows > 0) {
    FT_RETURN_IF_ERROR(swiglu(h.slice(0, 0, rows).slice(1, 0, inter), h.slice(0, 0, rows).slice(1, inter, inter),
                              act.slice(0, 0, rows), s));
  }
  for (int64_t e = 0; e < n_expert; ++e) {
    const int64_t r0 = offsets[static_cast<size_t>(e)], cnt = offsets[static_cast<size_t>(e) + 1] - r0;
    if (cnt > 0) FT_RETURN_IF_ERROR(matmul(act.slice(0, r0, cnt), down.select(0, e), Tensor{}, y.slice(0, r0, cnt), s));
  }
  with_type(out.dtype, [&](auto to) {
    using TO = decltype(to);
    combine_rows_kernel<TO><<<static_cast<unsigned>(n), 256, 0, st>>>(l.y, l.position, weights.ptr<const float>(),
                                                                       weights.stride[0], k, d, out.ptr<TO>(),
                                                                       out.stride[0]);
  });
  return launch_status("moe_experts (combine)");
}

}  // namespace ft::cuda
