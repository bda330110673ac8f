// matmul: out = x @ w^T (+ bias). Decode batches of 1..4 rows go through a bandwidth-bound GEMV (one warp per
// weight row, 16-byte loads, fp32 sums; a programmatic dependent that starts loading its weights early); bf16 x
// bf16 through cuBLASLt (fp32 accumulate, bf16 or f32 output); everything else (f32 activations or weights,
// unaligned shapes) through the fp32 CUDA-core tile GEMM.
#include <string>

#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/gemm_simt.cuh"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/vec_load.cuh"

namespace ft::cuda {
namespace {

constexpr int kGemvMaxRows = 4;
constexpr int kGemvWarps = 8;

struct GemvArgs {
  const void* x;  // [N, k], row stride ldx
  int64_t ldx;
  const void* w;  // [m, k], row stride ldw
  int64_t ldw;
  void* out;  // [N, m], row stride ldo
  int64_t ldo, m, k;
};

// One warp per weight row j: out[r, j] = sum_c x[r, c] w[j, c] for the N rows of x. k % 8 == 0, rows 16-byte
// aligned. Each lane keeps B chunks of the row in flight before their arithmetic; the first B are loaded before
// waiting for the kernel before (weights are no kernel's output, pdl.cuh), so the weights of a GEMV launched
// behind a short kernel are on their way while that kernel runs.
template <class TX, class TW, class TO, int N, int B, int MinBlocks = 1>
__global__ void __launch_bounds__(kGemvWarps * 32, MinBlocks) gemv_kernel(GemvArgs a) {
  const int lane = threadIdx.x & 31;
  const int64_t j = blockIdx.x * int64_t{kGemvWarps} + (threadIdx.x >> 5);
  const int n_chunks = static_cast<int>(a.k / 8);  // 32-bit chunk indices: registers for the loads
  const TW* wr = static_cast<const TW*>(a.w) + j * a.ldw;
  Chunk8<TW> wc[B];
  const auto load_batch = [&](int c0) {
#pragma unroll
    for (int u = 0; u < B; ++u)
      if (c0 + u * 32 < n_chunks) wc[u].load(wr + (c0 + u * 32) * 8);
  };
  if (j < a.m) load_batch(lane);
  pdl_wait_then_release();
  if (j >= a.m) return;
  const TX* x = static_cast<const TX*>(a.x);
  float acc[N] = {};
  for (int c0 = lane; c0 < n_chunks; c0 += 32 * B) {
    if (c0 != lane) load_batch(c0);
#pragma unroll
    for (int u = 0; u < B; ++u) {
      const int c = c0 + u * 32;
      if (c >= n_chunks) break;
#pragma unroll
      for (int r = 0; r < N; ++r) {
        float xv[8];
        load8(x + r * a.ldx + c * 8, xv);
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[r] = fmaf(xv[i], wc[u].get(i), acc[r]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < N; ++r) {
    const float v = warp_sum(acc[r]);
    if (lane == 0) static_cast<TO*>(a.out)[r * a.ldo + j] = from_f32<TO>(v);
  }
}

template <class TX, class TW, class TO>
__global__ void __launch_bounds__(kSimtThreads) simt_gemm_kernel(const TX* x, int64_t ldx, const TW* w, int64_t ldw,
                                                                 TO* out, int64_t ldo, int64_t n, int64_t m,
                                                                 int64_t k) {
  __shared__ SimtSmem sm;
  const int64_t r0 = blockIdx.y * int64_t{kSimtTile}, c0 = blockIdx.x * int64_t{kSimtTile};
  float acc[4][4];
  simt_tile(x + r0 * ldx, ldx, nullptr, n - r0, w + c0 * ldw, ldw, m - c0, k, sm, acc);
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t r = r0 + ty + 16 * i, c = c0 + tx + 16 * j;
      if (r < n && c < m) out[r * ldo + c] = from_f32<TO>(acc[i][j]);
    }
}

template <class TB, class TO>
__global__ void add_bias_kernel(const TB* bias, TO* out, int64_t ldo, int64_t n, int64_t m) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n * m; i += int64_t{gridDim.x} * blockDim.x) {
    TO* o = out + i / m * ldo + i % m;
    *o = from_f32<TO>(to_f32(*o) + to_f32(bias[i % m]));
  }
}

int alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int b = 1;
  while (b < 256 && (a & static_cast<uintptr_t>(b)) == 0) b <<= 1;
  return b;
}

// The cuBLASLt plan for this problem (column-major view: out^T [m, n] = w [k, m]^T @ x^T [k, n]).
const LtPlan& lt_plan(CudaStream& cs, const Tensor& x, const Tensor& w, const Tensor& out) {
  const int64_t n = x.dim(0), m = w.dim(0), k = x.dim(1);
  const LtKey key{n, m, k, x.stride[0], w.stride[0], out.stride[0], static_cast<int>(out.dtype), alignment(x.data()),
                  alignment(w.data()), alignment(out.data())};
  auto [it, inserted] = cs.lt_plans().try_emplace(key);
  LtPlan& p = it->second;
  if (!inserted) return p;
  const cudaDataType_t out_type = out.dtype == DType::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
  bool ok = cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS;
  ok = ok && cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)) ==
                 CUBLAS_STATUS_SUCCESS;
  ok = ok && cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof(no_trans)) ==
                 CUBLAS_STATUS_SUCCESS;
  ok = ok && cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, static_cast<uint64_t>(k), static_cast<uint64_t>(m),
                                        w.stride[0]) == CUBLAS_STATUS_SUCCESS;
  ok = ok && cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, static_cast<uint64_t>(k), static_cast<uint64_t>(n),
                                        x.stride[0]) == CUBLAS_STATUS_SUCCESS;
  ok = ok && cublasLtMatrixLayoutCreate(&p.d, out_type, static_cast<uint64_t>(m), static_cast<uint64_t>(n),
                                        out.stride[0]) == CUBLAS_STATUS_SUCCESS;
  if (!ok) return p;
  cublasLtMatmulPreference_t pref = nullptr;
  if (cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS) return p;
  const size_t ws = CudaStream::kLtWorkspaceBytes;
  const uint32_t al_a = static_cast<uint32_t>(std::get<8>(key)), al_b = static_cast<uint32_t>(std::get<7>(key));
  const uint32_t al_d = static_cast<uint32_t>(std::get<9>(key));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof(al_a));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof(al_b));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_d, sizeof(al_d));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_d, sizeof(al_d));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(cs.lt(), p.desc, p.a, p.b, p.d, p.d, pref, 1, &result, &found) ==
          CUBLAS_STATUS_SUCCESS &&
      found > 0) {
    p.algo = result.algo;
    p.usable = true;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  return p;
}

template <auto Kernel>
cudaError_t launch_gemv_kernel(const GemvArgs& a, const CudaStream& cs) {
  return launch_pdl(cs.pdl(), Kernel, dim3(grid_for(a.m, kGemvWarps)), dim3(kGemvWarps * 32), 0, cs.get(), a);
}

// A whole 4096-wide bf16 row in flight per lane where the registers allow it, else 2048 elements at a time.
template <class TX, class TW, class TO, int N>
cudaError_t launch_gemv(const GemvArgs& a, const CudaStream& cs) {
  constexpr bool kNarrow = sizeof(TW) == 2 && N <= 2;  // few registers per chunk and row
  if constexpr (kNarrow)
    if (a.k > 2048) return launch_gemv_kernel<gemv_kernel<TX, TW, TO, N, 16>>(a, cs);
  // A matrix of up to kOneWaveBlocks blocks per SM (Qwen3-30B's qkv: 5120 rows) in one wave, at 48 registers: every
  // row's first loads go out before the kernel before ends. Larger ones (lm_head) keep their registers.
  constexpr int kOneWaveBlocks = 5;
  if constexpr (kNarrow && N == 1)
    if (a.m <= int64_t{kOneWaveBlocks} * kGemvWarps * cs.n_sm())
      return launch_gemv_kernel<gemv_kernel<TX, TW, TO, N, 8, kOneWaveBlocks>>(a, cs);
  return launch_gemv_kernel<gemv_kernel<TX, TW, TO, N, kNarrow ? 8 : 4>>(a, cs);
}

template <class TX, class TW, class TO>
cudaError_t launch_gemv(const Tensor& x, const Tensor& w, const Tensor& out, const CudaStream& cs) {
  const GemvArgs a{x.data(), x.stride[0], w.data(), w.stride[0], out.data(), out.stride[0], w.dim(0), x.dim(1)};
  switch (x.dim(0)) {
    case 1: return launch_gemv<TX, TW, TO, 1>(a, cs);
    case 2: return launch_gemv<TX, TW, TO, 2>(a, cs);
    case 3: return launch_gemv<TX, TW, TO, 3>(a, cs);
    default: return launch_gemv<TX, TW, TO, 4>(a, cs);
  }
}

}  // namespace

Status matmul(const Tensor& x,     // [n, k] f32/bf16
              const Tensor& w,     // [m, k] f32/bf16
              const Tensor& bias,  // [m] f32/bf16 or undefined
              const Tensor& out,   // [n, m] f32/bf16
              Stream& s) {
  FT_RETURN_IF_ERROR(device_check("matmul", {&x, &w, &bias, &out}));
  if (!is_fb(x.dtype) || !is_fb(w.dtype) || !is_fb(out.dtype) || (bias.defined() && !is_fb(bias.dtype)))
    return dtype_error("matmul", "x/w/bias/out", x);
  if (x.ndim != 2 || w.ndim != 2 || out.ndim != 2 || w.dim(1) != x.dim(1) || out.dim(0) != x.dim(0) ||
      out.dim(1) != w.dim(0) || (bias.defined() && bias.numel() != w.dim(0)))
    return shape_error("matmul", "x " + x.shape_string() + " w " + w.shape_string() + " out " + out.shape_string());
  const int64_t n = x.dim(0), m = w.dim(0), k = x.dim(1);
  if (n == 0 || m == 0) return ok_status();
  CudaStream& cs = cuda_stream(s);
  const cudaStream_t st = cs.get();
  const size_t xs = dtype_bytes(x.dtype, 1), ws = dtype_bytes(w.dtype, 1);
  const bool vec = k % 8 == 0 && aligned16(x.data()) && aligned16(w.data()) && (x.stride[0] * xs) % 16 == 0 &&
                   (w.stride[0] * ws) % 16 == 0;
  bool done = false;
  if (n <= kGemvMaxRows && vec) {
    cudaError_t err = cudaSuccess;
    with_types({x.dtype, w.dtype, out.dtype}, [&](auto tx, auto tw, auto to) {
      err = launch_gemv<decltype(tx), decltype(tw), decltype(to)>(x, w, out, cs);
    });
    FT_RETURN_IF_ERROR(cuda_status(err, "matmul (gemv)"));
    done = true;
  } else if (x.dtype == DType::kBF16 && w.dtype == DType::kBF16 && k > 0) {
    const LtPlan& p = lt_plan(cs, x, w, out);
    if (p.usable) {
      const float alpha = 1.0f, beta = 0.0f;
      const cublasStatus_t r =
          cublasLtMatmul(cs.lt(), p.desc, &alpha, w.data(), p.a, x.data(), p.b, &beta, out.data(), p.d, out.data(),
                         p.d, &p.algo, cs.lt_workspace(), CudaStream::kLtWorkspaceBytes, st);
      if (r != CUBLAS_STATUS_SUCCESS) return internal_error("cuda matmul: cublasLtMatmul failed (" + std::to_string(r) + ")");
      done = true;
    }
  }
  if (!done) {
    const dim3 grid(grid_for(m, kSimtTile), grid_for(n, kSimtTile));
    if (grid.y > 65535) return shape_error("matmul", "too many rows for one launch");
    with_types({x.dtype, w.dtype, out.dtype}, [&](auto tx, auto tw, auto to) {
      using TX = decltype(tx);
      using TW = decltype(tw);
      using TO = decltype(to);
      simt_gemm_kernel<TX, TW, TO><<<grid, kSimtThreads, 0, st>>>(x.ptr<const TX>(), x.stride[0],
                                                                  w.ptr<const TW>(), w.stride[0], out.ptr<TO>(),
                                                                  out.stride[0], n, m, k);
    });
  }
  FT_RETURN_IF_ERROR(launch_status("matmul"));
  if (!bias.defined()) return ok_status();
  with_types({bias.dtype, out.dtype}, [&](auto tb, auto to) {
    using TB = decltype(tb);
    using TO = decltype(to);
    add_bias_kernel<<<static_cast<unsigned>(std::min<int64_t>(grid_for(n * m, 256), 65536)), 256, 0, st>>>(
        bias.ptr<const TB>(), out.ptr<TO>(), out.stride[0], n, m);
  });
  return launch_status("matmul bias");
}

}  // namespace ft::cuda
