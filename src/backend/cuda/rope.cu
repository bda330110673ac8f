// rope: rotates the first rot_dim dims of every head (rotate-half or interleaved pairs); the rest pass
// through. angle = f32(position) * inv_freq[i] as a float multiply (as transformers forms it); its cos and
// sin are taken in double and rounded to float, as the CPU op does, so f32 activations match it closely.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/rope.cuh"

namespace ft::cuda {
namespace {

// One block per (token, head), a thread per rotated pair; each thread takes its own angle's cos and sin.
template <class TX, class TO>
__global__ void rope_kernel(const TX* x, int64_t x_tok, int64_t x_head, TO* out, int64_t o_tok, int64_t o_head,
                            const int32_t* positions, const float* inv_freq, int64_t hd, int64_t half,
                            bool interleaved, float factor, bool copy_tail) {
  const int64_t t = blockIdx.x, h = blockIdx.y;
  const TX* xi = x + t * x_tok + h * x_head;
  TO* o = out + t * o_tok + h * o_head;
  const float pos = static_cast<float>(positions[t]);
  const int64_t step = interleaved ? 2 : 1, other = interleaved ? 1 : half;
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    const int64_t a = i * step, b = a + other;
    float y0, y1;
    rope_pair(pos, inv_freq[i], factor, to_f32(xi[a]), to_f32(xi[b]), y0, y1);
    o[a] = from_f32<TO>(y0);
    o[b] = from_f32<TO>(y1);
  }
  if (copy_tail)
    for (int64_t i = 2 * half + threadIdx.x; i < hd; i += blockDim.x) o[i] = from_f32<TO>(to_f32(xi[i]));
}

}  // namespace

Status rope(const Tensor& x,          // [n, n_head, head_dim] f32/bf16
            const Tensor& positions,  // [n] i32
            const Tensor& inv_freq,   // [rot_dim / 2] f32
            const Tensor& out,        // like x (may alias x)
            const RopeParams& p, Stream& s) {
  FT_RETURN_IF_ERROR(device_check("rope", {&x, &positions, &inv_freq, &out}));
  if (!is_fb(x.dtype) || !is_fb(out.dtype)) return dtype_error("rope", "x/out", x);
  if (positions.dtype != DType::kI32) return dtype_error("rope", "positions", positions);
  if (inv_freq.dtype != DType::kF32) return dtype_error("rope", "inv_freq", inv_freq);
  if (x.ndim != 3 || !same_shape(x, out)) return shape_error("rope", "x and out must be [n, n_head, head_dim]");
  const int64_t n = x.dim(0), hd = x.dim(2), half = p.rot_dim / 2;
  if (p.rot_dim < 0 || p.rot_dim % 2 != 0 || p.rot_dim > hd || half > kRopeMaxHalf)
    return shape_error("rope", "rot_dim must be even and at most head_dim (and 1024)");
  if (positions.numel() != n || inv_freq.numel() != half) return shape_error("rope", "positions/inv_freq size");
  if (n == 0 || x.dim(1) == 0) return ok_status();
  if (x.dim(1) > 65535) return shape_error("rope", "too many heads");
  const bool copy_tail = (x.data() != out.data() || x.stride != out.stride) && p.rot_dim < hd;
  with_types({x.dtype, out.dtype}, [&](auto tx, auto to) {
    using TX = decltype(tx);
    using TO = decltype(to);
    const dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>(x.dim(1)));
    rope_kernel<<<grid, half > 64 ? 128 : 64, 0, cuda_stream(s).get()>>>(
        x.ptr<const TX>(), x.stride[0], x.stride[1], out.ptr<TO>(), out.stride[0], out.stride[1],
        positions.ptr<const int32_t>(), inv_freq.ptr<const float>(), hd, half, p.interleaved, p.attention_factor,
        copy_tail);
  });
  return launch_status("rope");
}

}  // namespace ft::cuda
