// matmul_heads: out[t, h, :] = x[t, h, :] @ w[h]^T, each head its own weight (multi-head latent attention's absorbed
// kv_b_proj: a head's query into the latent space, the latent output back into the head's values). Decode steps of
// 1..4 rows run one kernel over every head's rows, a warp a weight row as the GEMV of gemv.cuh; longer steps run
// matmul a head at a time (cuBLASLt, tensor cores or the tile GEMM as matmul picks).
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/vec_load.cuh"

namespace ft::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kMaxRows = 4;

struct HeadsArgs {
  const void* x;  // [N, H, k]
  int64_t x_tok, x_head;
  const void* w;  // [H, m, k], rows contiguous
  int64_t w_head, w_row;
  void* out;  // [N, H, m]
  int64_t o_tok, o_head, m, k;
};

// Block (row block, head h): warp j's weight row of head h against the N rows' x of that head. k % 8 == 0 and every
// row 16-byte aligned.
template <class TX, class TW, class TO, int N>
__global__ void __launch_bounds__(kWarps * 32) matmul_heads_kernel(HeadsArgs a) {
  const int lane = threadIdx.x & 31;
  const int64_t h = blockIdx.y, j = blockIdx.x * int64_t{kWarps} + (threadIdx.x >> 5);
  if (j >= a.m) return;
  const TW* wr = static_cast<const TW*>(a.w) + h * a.w_head + j * a.w_row;
  const TX* x = static_cast<const TX*>(a.x) + h * a.x_head;
  float acc[N] = {};
  for (int64_t c = lane * 8; c < a.k; c += 32 * 8) {
    Chunk8<TW> wc;
    wc.load(wr + c);
#pragma unroll
    for (int r = 0; r < N; ++r) {
      float xv[8];
      load8(x + r * a.x_tok + c, xv);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[r] = fmaf(xv[i], wc.get(i), acc[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < N; ++r) {
    const float v = warp_sum(acc[r]);
    if (lane == 0) static_cast<TO*>(a.out)[r * a.o_tok + h * a.o_head + j] = from_f32<TO>(v);
  }
}

template <class TX, class TW, class TO>
void launch_heads(const HeadsArgs& a, int64_t n, int64_t heads, cudaStream_t st) {
  const dim3 grid(grid_for(a.m, kWarps), static_cast<unsigned>(heads));
  switch (n) {
    case 1:
      matmul_heads_kernel<TX, TW, TO, 1><<<grid, kWarps * 32, 0, st>>>(a);
      break;
    case 2:
      matmul_heads_kernel<TX, TW, TO, 2><<<grid, kWarps * 32, 0, st>>>(a);
      break;
    case 3:
      matmul_heads_kernel<TX, TW, TO, 3><<<grid, kWarps * 32, 0, st>>>(a);
      break;
    default:
      matmul_heads_kernel<TX, TW, TO, 4><<<grid, kWarps * 32, 0, st>>>(a);
      break;
  }
}

}  // namespace

Status matmul_heads(const Tensor& x,    // [n, H, k] f32/bf16
                    const Tensor& w,    // [H, m, k] f32/bf16
                    const Tensor& out,  // [n, H, m] f32/bf16
                    Stream& s) {
  FT_RETURN_IF_ERROR(device_check("matmul_heads", {&x, &w, &out}));
  if (!is_fb(x.dtype) || !is_fb(w.dtype) || !is_fb(out.dtype)) return dtype_error("matmul_heads", "x/w/out", x);
  if (x.ndim != 3 || w.ndim != 3 || out.ndim != 3 || w.dim(0) != x.dim(1) || w.dim(2) != x.dim(2) ||
      out.dim(0) != x.dim(0) || out.dim(1) != x.dim(1) || out.dim(2) != w.dim(1))
    return shape_error("matmul_heads",
                       "x " + x.shape_string() + " w " + w.shape_string() + " out " + out.shape_string());
  const int64_t n = x.dim(0), heads = x.dim(1), m = w.dim(1), k = x.dim(2);
  if (n == 0 || heads == 0 || m == 0) return ok_status();
  const size_t xs = dtype_bytes(x.dtype, 1), ws = dtype_bytes(w.dtype, 1);
  const bool vec = k % 8 == 0 && aligned16(x.data()) && aligned16(w.data()) && (x.stride[0] * xs) % 16 == 0 &&
                   (x.stride[1] * xs) % 16 == 0 && (w.stride[0] * ws) % 16 == 0 && (w.stride[1] * ws) % 16 == 0;
  if (n > kMaxRows || !vec) {
    for (int64_t h = 0; h < heads; ++h)
      FT_RETURN_IF_ERROR(matmul(x.select(1, h), w.select(0, h), Tensor{}, out.select(1, h), s));
    return ok_status();
  }
  const HeadsArgs a{x.data(),      x.stride[0],   x.stride[1], w.data(), w.stride[0], w.stride[1], out.data(),
                    out.stride[0], out.stride[1], m,           k};
  with_types({x.dtype, w.dtype, out.dtype}, [&](auto tx, auto tw, auto to) {
    launch_heads<decltype(tx), decltype(tw), decltype(to)>(a, n, heads, cuda_stream(s).get());
  });
  return launch_status("matmul_heads");
}

}  // namespace ft::cuda
