// sample: one block per row. Tokens are ordered by a 64-bit key (the logit's order-preserving bits, then the
// inverted id, so ties rank the lower id first); the top-k and top-p cuts are the largest keys whose count / mass
// of larger-or-equal keys still reaches the cut, found by bisection over the keys; the draw walks contiguous id
// ranges per thread after a block scan. Every sum has a fixed order, so a row samples the same way every time.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"

namespace ft::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ uint64_t key_of(float l, int64_t i) {
  uint32_t b = __float_as_uint(l);
  b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return (uint64_t{b} << 32) | (0xffffffffu - static_cast<uint32_t>(i));
}
__device__ __forceinline__ int64_t id_of(uint64_t key) { return 0xffffffffu - static_cast<uint32_t>(key); }

struct Shared {
  uint64_t u64[kWarps];
  float f32[kWarps];
  int64_t chosen;
};

__device__ uint64_t block_max_u64(uint64_t v, Shared& sh) {
  for (int o = 16; o > 0; o >>= 1) {
    const uint64_t w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh.u64[threadIdx.x >> 5] = v;
  __syncthreads();
  v = sh.u64[threadIdx.x & 31];
  for (int o = 16; o > 0; o >>= 1) {
    const uint64_t w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}

__device__ float block_sum_f32(float v, Shared& sh) {
  v = warp_sum(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh.f32[threadIdx.x >> 5] = v;
  __syncthreads();
  return warp_sum(sh.f32[threadIdx.x & 31]);
}

// Count (as float, exact below 2^24) or probability mass of the tokens whose key is >= k and >= floor.
template <bool kMass>
__device__ float at_least(const float* l, int64_t v, float mx, float inv_t, uint64_t k, uint64_t floor,
                          Shared& sh) {
  float acc = 0;
  for (int64_t i = threadIdx.x; i < v; i += kThreads) {
    const uint64_t key = key_of(l[i], i);
    if (key >= k && key >= floor) acc += kMass ? __expf((l[i] - mx) * inv_t) : 1.0f;
  }
  return block_sum_f32(acc, sh);
}

// The largest key K in [lo, hi] with f(K) >= target (f falls as K grows; f(lo) >= target).
template <bool kMass>
__device__ uint64_t bisect(const float* l, int64_t v, float mx, float inv_t, uint64_t lo, uint64_t hi,
                           uint64_t floor, float target, Shared& sh) {
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo + 1) / 2;
    if (at_least<kMass>(l, v, mx, inv_t, mid, floor, sh) >= target) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

__global__ void __launch_bounds__(kThreads) sample_kernel(const float* logits, const float* params, int64_t v,
                                                          int32_t* ids, float* logprobs, int64_t ld_lp,
                                                          int32_t* top_ids, int64_t n_top) {
  __shared__ Shared sh;
  const int64_t row = blockIdx.x;
  const float* l = logits + row * v;
  const float* p = params + row * 5;
  const float t = p[0], top_k = p[1], top_p = p[2], min_p = p[3], u = p[4];
  uint64_t best = 0;
  for (int64_t i = threadIdx.x; i < v; i += kThreads) {
    const uint64_t k = key_of(l[i], i);
    best = k > best ? k : best;
  }
  best = block_max_u64(best, sh);
  const float mx = l[id_of(best)];
  float se = 0;
  for (int64_t i = threadIdx.x; i < v; i += kThreads) se += __expf(l[i] - mx);
  const float lse = mx + logf(block_sum_f32(se, sh));
  // The n_top most likely: each pass takes the largest key below the last one.
  uint64_t prev = best;
  for (int64_t j = 0; j < n_top; ++j) {
    uint64_t k = 0;
    if (j > 0) {
      for (int64_t i = threadIdx.x; i < v; i += kThreads) {
        const uint64_t ki = key_of(l[i], i);
        if (ki < prev && ki > k) k = ki;
      }
      prev = block_max_u64(k, sh);
    }
    if (threadIdx.x == 0) {
      top_ids[row * n_top + j] = static_cast<int32_t>(id_of(prev));
      logprobs[row * ld_lp + 1 + j] = l[id_of(prev)] - lse;
    }
  }
  int64_t chosen = id_of(best);
  if (t > 0 && top_k != 1) {
    const float inv_t = 1.0f / t;
    uint64_t floor = 0;
    if (top_k > 0 && top_k < static_cast<float>(v)) floor = bisect<false>(l, v, mx, inv_t, 0, best, 0, top_k, sh);
    if (top_p < 1) {
      const float z = at_least<true>(l, v, mx, inv_t, 0, floor, sh);
      floor = bisect<true>(l, v, mx, inv_t, floor, best, floor, top_p * z, sh);
    }
    // Kept: key >= floor and probability >= min_p (the largest is exp(0) = 1). Thread i walks ids [i c, (i+1) c).
    const int64_t chunk = (v + kThreads - 1) / kThreads, b = threadIdx.x * chunk;
    const int64_t e = b + chunk < v ? b + chunk : v;
    auto kept = [&](int64_t i, float& q) {
      q = __expf((l[i] - mx) * inv_t);
      return key_of(l[i], i) >= floor && q >= min_p;
    };
    float own = 0;
    for (int64_t i = b; i < e; ++i) {
      float q;
      if (kept(i, q)) own += q;
    }
    // Inclusive block scan of `own`: warps, then the warp totals.
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float inc = own;
    for (int o = 1; o < 32; o <<= 1) {
      const float w = __shfl_up_sync(0xffffffffu, inc, o);
      if (lane >= o) inc += w;
    }
    __syncthreads();  // every thread has read sh.f32 of the last block sum
    if (lane == 31) sh.f32[warp] = inc;
    if (threadIdx.x == 0) sh.chosen = -1;
    __syncthreads();
    if (warp == 0) {
      float w = sh.f32[lane];
      for (int o = 1; o < 32; o <<= 1) {
        const float x = __shfl_up_sync(0xffffffffu, w, o);
        if (lane >= o) w += x;
      }
      sh.f32[lane] = w;  // inclusive warp totals
    }
    __syncthreads();
    inc += warp > 0 ? sh.f32[warp - 1] : 0.0f;
    const float total = sh.f32[kWarps - 1], target = u * total, excl = inc - own;
    // The first thread with mass whose running total passes the target walks its range; the last thread with mass
    // takes a target past every total. One thread, chosen by reductions: the scan's rounding can leave neighbouring
    // threads' ranges [inc - own, inc) overlapping or apart, so testing each range alone could pick two or none.
    const uint64_t first_past = block_max_u64(own > 0 && target < inc ? kThreads - threadIdx.x : 0, sh);
    const bool last_with_mass = block_max_u64(own > 0 ? threadIdx.x + 1 : 0, sh) == threadIdx.x + 1;
    if (first_past > 0 ? first_past == kThreads - threadIdx.x : last_with_mass) {
      float cum = excl;
      int64_t pick = -1;
      for (int64_t i = b; i < e; ++i) {
        float q;
        if (!kept(i, q)) continue;
        pick = i;
        cum += q;
        if (target < cum) break;
      }
      sh.chosen = pick;
    }
    __syncthreads();
    if (sh.chosen >= 0) chosen = sh.chosen;
  }
  if (threadIdx.x == 0) {
    ids[row] = static_cast<int32_t>(chosen);
    logprobs[row * ld_lp] = l[chosen] - lse;
  }
}

}  // namespace

Status sample(const Tensor& logits,   // [n, vocab] f32
              const Tensor& params,   // [n, 5] f32: temperature, top_k, top_p, min_p, u
              const Tensor& ids,      // [n] i32
              const Tensor& logprobs, // [n, 1 + n_top] f32
              const Tensor& top_ids,  // [n, n_top] i32 or undefined
              Stream& s) {
  FT_RETURN_IF_ERROR(device_check("sample", {&logits, &params, &ids, &logprobs, &top_ids}));
  const int64_t n = logits.ndim == 2 ? logits.dim(0) : -1;
  const int64_t n_top = logprobs.ndim == 2 ? logprobs.dim(1) - 1 : -1;
  if (n < 0 || n_top < 0 || logits.dtype != DType::kF32 || params.dtype != DType::kF32 || params.ndim != 2 ||
      params.dim(0) != n || params.dim(1) != 5 || ids.dtype != DType::kI32 || ids.numel() != n ||
      logprobs.dtype != DType::kF32 || logprobs.dim(0) != n || n_top > logits.dim(1) ||
      (n_top > 0 && (top_ids.dtype != DType::kI32 || top_ids.ndim != 2 || top_ids.dim(0) != n ||
                     top_ids.dim(1) != n_top || !top_ids.is_contiguous())) ||
      !logits.is_contiguous() || !params.is_contiguous() || !ids.is_contiguous() || !logprobs.is_contiguous())
    return shape_error("sample", "logits, params, ids, logprobs and top_ids do not match");
  if (logits.dim(1) > INT32_MAX) return shape_error("sample", "vocabulary too large");
  if (n == 0) return ok_status();
  sample_kernel<<<static_cast<unsigned>(n), kThreads, 0, cuda_stream(s).get()>>>(
      logits.ptr<const float>(), params.ptr<const float>(), logits.dim(1), ids.ptr<int32_t>(),
      logprobs.ptr<float>(), logprobs.dim(1), n_top > 0 ? top_ids.ptr<int32_t>() : nullptr, n_top);
  return launch_status("sample");
}

}  // namespace ft::cuda
