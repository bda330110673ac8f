// matmul: out = x @ w^T (+ bias). Decode batches of 1..4 rows go through the bandwidth-bound GEMV of gemv.cuh; bf16 x
// bf16 through cuBLASLt (fp32 accumulate, bf16 or f32 output); f32 x bf16 (Qwen3.5's fp32 hidden states) through the
// tensor-core GEMM of tc_gemm.cuh, each f32 value split in three bf16 parts; everything else (f32 weights, unaligned
// shapes) through the fp32 CUDA-core tile GEMM.
#include <bit>
#include <string>

#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/gemm_simt.cuh"
#include "backend/cuda/gemv.cuh"
#include "backend/cuda/tc_gemm.cuh"

namespace ft::cuda {
namespace {

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
  // The algorithm is the heuristic's for the rows rounded up to a power of two, where it runs this problem: a step
  // padded to its CUDA graph's batch size (at most that power of two) then computes its real rows with the
  // algorithm, tiles and split of the same step run eagerly, so replay is bitwise equal to eager.
  const auto n_plan = static_cast<uint64_t>(std::bit_ceil(static_cast<uint64_t>(n)));
  cublasLtMatrixLayout_t b_plan = nullptr, d_plan = nullptr;
  if (n_plan != static_cast<uint64_t>(n) &&
      cublasLtMatrixLayoutCreate(&b_plan, CUDA_R_16BF, static_cast<uint64_t>(k), n_plan, x.stride[0]) ==
          CUBLAS_STATUS_SUCCESS &&
      cublasLtMatrixLayoutCreate(&d_plan, out_type, static_cast<uint64_t>(m), n_plan, out.stride[0]) ==
          CUBLAS_STATUS_SUCCESS) {
    constexpr int kCandidates = 8;
    cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
    int found = 0;
    if (cublasLtMatmulAlgoGetHeuristic(cs.lt(), p.desc, p.a, b_plan, d_plan, d_plan, pref, kCandidates, results,
                                       &found) == CUBLAS_STATUS_SUCCESS)
      for (int i = 0; i < found && !p.usable; ++i) {
        cublasLtMatmulHeuristicResult_t check{};
        if (cublasLtMatmulAlgoCheck(cs.lt(), p.desc, p.a, p.b, p.d, p.d, &results[i].algo, &check) ==
                CUBLAS_STATUS_SUCCESS &&
            check.workspaceSize <= ws)
          p.algo = results[i].algo, p.usable = true;
      }
  }
  if (b_plan) cublasLtMatrixLayoutDestroy(b_plan);
  if (d_plan) cublasLtMatrixLayoutDestroy(d_plan);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (!p.usable &&
      cublasLtMatmulAlgoGetHeuristic(cs.lt(), p.desc, p.a, p.b, p.d, p.d, pref, 1, &result, &found) ==
          CUBLAS_STATUS_SUCCESS &&
      found > 0) {
    p.algo = result.algo;
    p.usable = true;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  return p;
}

template <class TX, class TW, class TO, int N>
struct PlainGemv {
  static constexpr int kOneWaveBlocks = 5;  // 48 registers
  template <int B, int MinBlocks>
  static constexpr auto kernel = gemv_kernel<TX, TW, TO, N, B, MinBlocks>;
};

template <class TX, class TW, class TO>
cudaError_t launch_gemv(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out, const CudaStream& cs) {
  GemvArgs a{x.data(), x.stride[0], w.data(), w.stride[0], out.data(), out.stride[0], w.dim(0), x.dim(1)};
  a.set_bias(bias);
  // One row's x staged in shared memory where it fits the default 48 KB. Steps of several rows read x from the L2:
  // their weights stream after the wait, and staging 4 rows (32 KB) cost batch 4 1.6% on the H200 (docs/perf.md).
  const size_t x_bytes = static_cast<size_t>(x.dim(1)) * sizeof(TX);
  a.x_staged = x.dim(0) == 1 && x_bytes <= 48 * 1024;
  switch (x.dim(0)) {
    case 1:
      return launch_gemv_family<PlainGemv<TX, TW, TO, 1>, TW, 1>(a, a.x_staged ? x_bytes : 0, cs);
    case 2:
      return launch_gemv_family<PlainGemv<TX, TW, TO, 2>, TW, 2>(a, 0, cs);
    case 3:
      return launch_gemv_family<PlainGemv<TX, TW, TO, 3>, TW, 3>(a, 0, cs);
    default:
      return launch_gemv_family<PlainGemv<TX, TW, TO, 4>, TW, 4>(a, 0, cs);
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
      err = launch_gemv<decltype(tx), decltype(tw), decltype(to)>(x, w, bias, out, cs);
    });
    FT_RETURN_IF_ERROR(cuda_status(err, "matmul (gemv)"));
    return ok_status();  // the bias is in
  } else if (x.dtype == DType::kF32 && w.dtype == DType::kBF16 && vec) {
    const TcGemmArgs g{.a = x.data(),
                       .lda = x.stride[0],
                       .w = w.ptr<const bf16>(),
                       .w_stride = 0,
                       .ldw = w.stride[0],
                       .offsets = nullptr,
                       .tiles = nullptr,
                       .rows = n,
                       .n_groups = 1,
                       .n = m,
                       .k = k,
                       .out = out.data(),
                       .ldo = out.stride[0]};
    const int64_t row_tiles = (n + kTcRows - 1) / kTcRows;
    if (row_tiles > kTcMaxRowTiles) return shape_error("matmul", "too many rows for one launch");
    const cudaError_t err = out.dtype == DType::kF32 ? launch_tc_gemm<false, float, float>(g, row_tiles, st)
                                                     : launch_tc_gemm<false, float, bf16>(g, row_tiles, st);
    FT_RETURN_IF_ERROR(cuda_status(err, "matmul (tensor-core f32 x bf16)"));
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
