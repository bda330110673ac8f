// sample: one block per row. Tokens are ordered by a 64-bit key (the logit's order-preserving bits, then the
// inverted id, so ties rank the lower id first). Every pass reads the row warp by warp: warp w takes the contiguous
// ids [w c, (w + 1) c), its lanes 16 bytes at a time where the row is aligned. The top-k and top-p cuts and the
// n_top most likely are found by `cut`: passes that count (or weigh by probability) the keys above a threshold
// narrow a band of keys that holds the cut, halving it in logit value while that narrows it, until it fits in shared
// memory; the band is then sorted and the cut read off its prefix sums. A row takes a few passes over its logits (7
// with top-k and top-p) where bisecting the 64-bit keys took about 64 a cut and one a top logprob. The draw picks
// the warp whose range holds the target mass, then that warp walks its range 128 ids at a time. Every sum has a
// fixed order, so a row samples the same way every time.
#include <climits>
#include <string>

#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"

namespace ft::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kBand = 2 * kThreads;  // keys a band holds in shared memory: two a thread

__device__ __forceinline__ uint32_t order_bits(float l) {  // larger float, larger bits
  const uint32_t b = __float_as_uint(l);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ uint64_t key_of(float l, int64_t i) {
  return (uint64_t{order_bits(l)} << 32) | (0xffffffffu - static_cast<uint32_t>(i));
}
__device__ __forceinline__ int64_t id_of(uint64_t key) { return 0xffffffffu - static_cast<uint32_t>(key); }
__device__ __forceinline__ float value_of(uint64_t key) {
  const auto b = static_cast<uint32_t>(key >> 32);
  return __uint_as_float((b & 0x80000000u) ? (b & 0x7fffffffu) : ~b);
}

// Warp w's ids [begin, end): contiguous ranges of a multiple of 4 ids, so that an aligned row's ranges are aligned.
__device__ __forceinline__ int64_t warp_begin(int64_t v, int w) {
  const int64_t c = (v + kWarps * 4 - 1) / (kWarps * 4) * 4;
  return min(v, w * c);
}

// f(x, i) for every logit x = l[i] of this warp's range, each lane four at a time by 16-byte loads (a batch of them in
// flight) where the row is aligned.
template <class F>
__device__ __forceinline__ void for_each_logit(const float* l, int64_t v, F&& f) {
  constexpr int kBatch = 2;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t b = warp_begin(v, warp), e = warp_begin(v, warp + 1);
  int64_t i = b + lane;
  if ((reinterpret_cast<uintptr_t>(l) & 15) == 0) {
    const int64_t n4 = (e - b) / 4;
    const float4* l4 = reinterpret_cast<const float4*>(l + b);
    for (int64_t j0 = lane; j0 < n4; j0 += 32 * kBatch) {
      float4 q[kBatch];
#pragma unroll
      for (int k = 0; k < kBatch; ++k)
        if (j0 + 32 * k < n4) q[k] = l4[j0 + 32 * k];
#pragma unroll
      for (int k = 0; k < kBatch; ++k) {
        const int64_t j = j0 + 32 * k, at = b + 4 * j;
        if (j >= n4) break;
        f(q[k].x, at), f(q[k].y, at + 1), f(q[k].z, at + 2), f(q[k].w, at + 3);
      }
    }
    i = b + 4 * n4 + lane;
  }
  for (; i < e; i += 32) f(l[i], i);
}

struct Shared {
  uint64_t band[kBand];  // a cut's band, sorted descending
  uint64_t u64[kWarps];
  float f32[kWarps], g32[kWarps];
  int band_n;
  int pick_warp;            // the draw's warp, -1 if nothing is kept
  float target, pick_base;  // the draw's target mass, and the kept mass before the picked warp's range
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

// Two sums over the block at once, in a fixed order.
__device__ float2 block_sum2(float a, float b, Shared& sh) {
  a = warp_sum(a);
  b = warp_sum(b);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh.f32[threadIdx.x >> 5] = a, sh.g32[threadIdx.x >> 5] = b;
  __syncthreads();
  return {warp_sum(sh.f32[threadIdx.x & 31]), warp_sum(sh.g32[threadIdx.x & 31])};
}

// Inclusive prefix sum of v over the lanes of the warp, in lane order (the whole warp calls it).
__device__ __forceinline__ float warp_inclusive_sum(float v, int lane) {
  for (int o = 1; o < 32; o <<= 1) {
    const float w = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += w;
  }
  return v;
}

// Inclusive prefix sum of v over the threads in thread order.
__device__ float block_inclusive_scan(float v, Shared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const float inc = warp_inclusive_sum(v, lane);
  __syncthreads();  // every thread is done with sh.f32
  if (lane == 31) sh.f32[warp] = inc;
  __syncthreads();
  if (warp == 0) sh.f32[lane] = warp_inclusive_sum(sh.f32[lane], lane);  // inclusive warp totals
  __syncthreads();
  return inc + (warp > 0 ? sh.f32[warp - 1] : 0.0f);
}

// The count (x) and probability mass exp((l - mx) / t) (y, when kMass) of the keys >= k.
template <bool kMass>
__device__ float2 above(const float* l, int64_t v, float mx, float inv_t, uint64_t k, Shared& sh) {
  float n = 0, m = 0;
  for_each_logit(l, v, [&](float x, int64_t i) {
    if (key_of(x, i) >= k) {
      n += 1.0f;
      if (kMass) m += __expf((x - mx) * inv_t);
    }
  });
  return block_sum2(n, m, sh);
}

// A threshold in (lo, hi]: halfway in logit value where both ends are finite and apart, else halfway in key space.
__device__ uint64_t midpoint(uint64_t lo, uint64_t hi, bool by_value) {
  const uint64_t by_key = lo + (hi - lo) / 2 + 1;
  const float a = value_of(lo), b = value_of(hi);
  if (!by_value || !isfinite(a) || !isfinite(b) || !(a < b)) return by_key;
  const uint64_t k = uint64_t{order_bits(0.5f * a + 0.5f * b)} << 32;  // the smallest key of that value
  return k > lo && k <= hi ? k : by_key;
}

// Gathers the n keys in [lo, hi] (n <= kBand) into sh.band, sorted descending (a bitonic sort).
__device__ void gather_sorted(const float* l, int64_t v, uint64_t lo, uint64_t hi, int n, Shared& sh) {
  if (threadIdx.x == 0) sh.band_n = 0;
  __syncthreads();
  for_each_logit(l, v, [&](float x, int64_t i) {
    const uint64_t key = key_of(x, i);
    if (key >= lo && key <= hi) {
      const int at = atomicAdd(&sh.band_n, 1);
      if (at < kBand) sh.band[at] = key;
    }
  });
  int p = 1;
  while (p < n) p <<= 1;
  __syncthreads();
  for (int j = n + static_cast<int>(threadIdx.x); j < p; j += kThreads) sh.band[j] = 0;  // pads sort last
  __syncthreads();
  for (int size = 2; size <= p; size <<= 1)
    for (int stride = size / 2; stride > 0; stride >>= 1) {
      for (int t = static_cast<int>(threadIdx.x); t < p / 2; t += kThreads) {
        const int i = 2 * t - (t & (stride - 1)), j = i + stride;
        const uint64_t a = sh.band[i], b = sh.band[j];
        if ((i & size) == 0 ? a < b : a > b) sh.band[i] = b, sh.band[j] = a;  // descending where (i & size) == 0
      }
      __syncthreads();
    }
}

// The largest key K in [lo, hi] with f(K) >= target, f(K) being the count (kMass false) or the probability mass of
// the keys >= K; f(lo) >= target and n_lo keys are >= lo. Passes narrow [lo, hi] until at most kBand keys lie in it
// (the keys above hi count n_above, weigh f_above < target); the band, sorted, holds the cut at the first key whose
// prefix sum brings f_above to the target.
template <bool kMass>
__device__ uint64_t cut(const float* l, int64_t v, float mx, float inv_t, uint64_t lo, uint64_t hi, float n_lo,
                        float target, Shared& sh) {
  float n_above = 0, f_above = 0;
  bool by_value = true;
  while (n_lo - n_above > kBand) {
    const uint64_t mid = midpoint(lo, hi, by_value);
    const float2 a = above<kMass>(l, v, mx, inv_t, mid, sh);
    const float f = kMass ? a.y : a.x, before = n_lo - n_above;
    if (f >= target)
      lo = mid, n_lo = a.x;
    else
      hi = mid - 1, n_above = a.x, f_above = f;
    by_value = n_lo - n_above <= 0.75f * before;  // value halving while it narrows the band, else key halving
  }
  const int n = static_cast<int>(n_lo - n_above);
  gather_sorted(l, v, lo, hi, n, sh);
  const int j0 = 2 * static_cast<int>(threadIdx.x), j1 = j0 + 1;
  const auto term = [&](int j) { return j >= n ? 0.0f : kMass ? __expf((value_of(sh.band[j]) - mx) * inv_t) : 1.0f; };
  const float t0 = term(j0), t1 = term(j1);
  const float inc1 = f_above + block_inclusive_scan(t0 + t1, sh), inc0 = inc1 - t1;
  const int first = j0 < n && inc0 >= target ? j0 : j1 < n && inc1 >= target ? j1 : INT_MAX;
  // The first index, as kBand - j; none (float rounding) takes the last key.
  const uint64_t best = block_max_u64(first == INT_MAX ? 0 : kBand - first, sh);
  return sh.band[best > 0 ? kBand - static_cast<int>(best) : n - 1];
}

// The kept token a draw of u lands on, in id order (-1 if nothing is kept): own is the kept mass of this thread's
// warp's range; the warp whose range holds the target u * total walks its range 128 ids a step (a warp scan a step),
// kept_q(x, i) giving a token's probability if kept, else 0. A target past every sum (float rounding) takes the last
// kept token before it.
template <class Q>
__device__ int64_t draw(const float* l, int64_t v, const Q& kept_q, float own, float u, Shared& sh) {
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // every thread is done with sh.f32
  if (lane == 0) sh.f32[warp] = own;
  __syncthreads();
  if (warp == 0) {
    const float w = sh.f32[lane], inc = warp_inclusive_sum(w, lane);
    const float target = u * __shfl_sync(kAll, inc, 31);
    const unsigned past = __ballot_sync(kAll, w > 0 && target < inc), mass = __ballot_sync(kAll, w > 0);
    const int pw = past ? __ffs(static_cast<int>(past)) - 1 : mass ? 31 - __clz(static_cast<int>(mass)) : -1;
    const float base = __shfl_sync(kAll, inc - w, pw < 0 ? 0 : pw);
    if (lane == 0) sh.pick_warp = pw, sh.target = target, sh.pick_base = base;
  }
  __syncthreads();
  if (warp == sh.pick_warp) {
    const float target = sh.target;
    float run = sh.pick_base;
    const int64_t e = warp_begin(v, warp + 1);
    int64_t pick = -1;
    for (int64_t c = warp_begin(v, warp); c < e; c += 128) {
      float q[4], mine = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int64_t i = c + 4 * lane + k;
        q[k] = i < e ? kept_q(l[i], i) : 0.0f;
        mine += q[k];
      }
      const float inc = warp_inclusive_sum(mine, lane);
      const unsigned crossing = __ballot_sync(kAll, mine > 0 && target < run + inc);
      const unsigned has = __ballot_sync(kAll, mine > 0);
      // The lane that holds the pick walks its four; with none crossing, the last lane with mass gives the step's last
      // kept token.
      const int src = crossing ? __ffs(static_cast<int>(crossing)) - 1 : has ? 31 - __clz(static_cast<int>(has)) : -1;
      if (src >= 0) {
        int64_t p = -1;
        if (lane == src) {  // the first token whose running sum passes the target, else the lane's last kept one
          float cum = run + inc - mine;
#pragma unroll
          for (int k = 0; k < 4; ++k)
            if (q[k] > 0) {
              p = c + 4 * lane + k;
              cum += q[k];
              if (crossing && target < cum) break;
            }
        }
        pick = __shfl_sync(kAll, p, src);
        if (crossing) break;
      }
      run += __shfl_sync(kAll, inc, 31);
    }
    if (lane == 0) sh.chosen = pick;
  }
  __syncthreads();
  return sh.pick_warp < 0 ? -1 : sh.chosen;
}

__global__ void __launch_bounds__(kThreads) sample_kernel(const float* logits, const float* params, int64_t v,
                                                          int32_t* ids, float* logprobs, int64_t ld_lp,
                                                          int32_t* top_ids, int64_t n_top) {
  __shared__ Shared sh;
  const int64_t row = blockIdx.x;
  const float* l = logits + row * v;
  const float* p = params + row * 5;
  const float t = p[0], top_k = floorf(p[1]), top_p = p[2], min_p = p[3], u = p[4];
  const float inv_t = t > 0 ? 1.0f / t : 1.0f;
  const bool sampled = t > 0 && top_k != 1, top_k_cut = top_k > 0 && top_k < static_cast<float>(v);
  // z_all (exp((l - mx) / t) summed over every token) serves top-p without top-k, and a draw that keeps every token.
  const bool want_z_all = sampled && !top_k_cut;
  // One pass: each thread's running max m (its first id where it ties) and its sums of exp(l - m) (and
  // exp((l - m) / t)) under it; -inf and NaN add nothing and are never the max.
  float m = -INFINITY, s1 = 0, st = 0;
  int64_t at = -1;
  for_each_logit(l, v, [&](float x, int64_t i) {
    if (x > m) {
      s1 = s1 * __expf(m - x) + 1.0f;
      if (want_z_all) st = st * __expf((m - x) * inv_t) + 1.0f;
      m = x, at = i;
    } else if (x > -INFINITY) {
      s1 += __expf(x - m);
      if (want_z_all) st += __expf((x - m) * inv_t);
    }
  });
  uint64_t best = block_max_u64(at < 0 ? 0 : key_of(m, at), sh);
  if (best == 0) best = key_of(l[0], 0);  // no logit above -inf: token 0
  const float mx = l[id_of(best)];
  st *= __expf((m - mx) * inv_t);  // this thread's share of z_all
  const float2 sums = block_sum2(s1 * __expf(m - mx), st, sh);
  const float lse = mx + logf(sums.x), z_all = sums.y;
  // The n_top most likely, in order.
  if (n_top > 0) {
    const uint64_t kn =
        n_top >= v ? 0 : cut<false>(l, v, mx, inv_t, 0, best, static_cast<float>(v), static_cast<float>(n_top), sh);
    gather_sorted(l, v, kn, best, static_cast<int>(n_top), sh);
    for (int64_t j = threadIdx.x; j < n_top; j += kThreads) {
      top_ids[row * n_top + j] = static_cast<int32_t>(id_of(sh.band[j]));
      logprobs[row * ld_lp + 1 + j] = value_of(sh.band[j]) - lse;
    }
  }
  int64_t chosen = id_of(best);
  if (sampled) {
    uint64_t floor = 0;  // kept: key >= floor
    float n_kept = static_cast<float>(v);
    if (top_k_cut) floor = cut<false>(l, v, mx, inv_t, 0, best, n_kept, top_k, sh), n_kept = top_k;
    if (top_p < 1) {
      const float z = top_k_cut ? above<true>(l, v, mx, inv_t, floor, sh).y : z_all;
      floor = cut<true>(l, v, mx, inv_t, floor, best, n_kept, top_p * z, sh);
    }
    // Kept: key >= floor and probability >= min_p (the largest is exp(0) = 1).
    const auto kept_q = [&](float x, int64_t i) {
      if (floor != 0 && key_of(x, i) < floor) return 0.0f;
      const float q = __expf((x - mx) * inv_t);
      return q >= min_p ? q : 0.0f;
    };
    float own = st;  // every token kept: the first pass's sums
    if (top_k_cut || top_p < 1 || min_p > 0) {
      own = 0;
      for_each_logit(l, v, [&](float x, int64_t i) { own += kept_q(x, i); });
    }
    const int64_t pick = draw(l, v, kept_q, warp_sum(own), u, sh);
    if (pick >= 0) chosen = pick;
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
  if (logits.dim(1) < 1 || logits.dim(1) > (int64_t{1} << 24))  // counts are exact floats up to 2^24
    return shape_error("sample", "vocabulary of 1 to 2^24 tokens expected");
  if (n_top > kBand) return shape_error("sample", "at most " + std::to_string(kBand) + " top logprobs");
  if (n == 0) return ok_status();
  sample_kernel<<<static_cast<unsigned>(n), kThreads, 0, cuda_stream(s).get()>>>(
      logits.ptr<const float>(), params.ptr<const float>(), logits.dim(1), ids.ptr<int32_t>(),
      logprobs.ptr<float>(), logprobs.dim(1), n_top > 0 ? top_ids.ptr<int32_t>() : nullptr, n_top);
  return launch_status("sample");
}

}  // namespace ft::cuda
