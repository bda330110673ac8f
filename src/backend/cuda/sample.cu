// sample: a row per thread-block cluster of up to 8 blocks (sm_90 and later; one block elsewhere, and where rows fill
// the device). Tokens are ordered by a 64-bit key (the logit's order-preserving bits, then the inverted id, so ties
// rank the lower id first). Every pass reads the row warp by warp: the row's warp w (over all of its blocks, in rank
// order) takes the contiguous ids [w c, (w + 1) c), its lanes 16 bytes at a time where the row is aligned; a block's
// totals combine over the cluster through distributed shared memory, in rank order, so that every block holds the
// same row totals. The top-k, top-p and n_top cuts are found by `hist_cut`: one pass bins the keys by their distance
// below the max (by count, or by probability), and the bins through the cut (or the cut's bin alone) are gathered into
// shared memory as a band, sorted, and the cut read off its prefix sums. A bin of more than a band (ties, a flat row)
// leaves the cut to `cut`: passes that count (or weigh) the keys above a threshold narrow a band of keys that holds
// it. Where the band holds every kept token (top-k up to 2048, or a top-p that keeps no more), top-p is cut and the
// token drawn inside it, sorted again by id (Qwen3's top-k 20, top-p 0.8: 3 passes over the logits). Else the draw
// picks the block, then the warp, whose range holds the target mass, and that warp walks its range 128 ids at a time.
// Every sum has a fixed order for a given cluster size, so a row samples the same way every time at a given batch
// size.
#include <cooperative_groups.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <string>

#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/pdl.cuh"

namespace ft::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kBand = 2 * kThreads;  // keys a band holds in shared memory: two a thread
constexpr int kMaxCluster = 8;
constexpr int kBins = kThreads;       // a mass histogram's bins, one a thread
constexpr float kBinsPerNat = 32.0f;  // bin b: (mx - l) (or -ln p) in [b, b + 1) / 32 (the last open-ended)
constexpr float kMassUnit = 0x1p39f;  // a histogram's mass in fixed point: exact sums in any order, 2^24 tokens fit

__device__ __forceinline__ uint32_t order_bits(float l) {  // larger float, larger bits
  const uint32_t b = __float_as_uint(l);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ uint64_t key_of(float l, int i) {
  return (uint64_t{order_bits(l)} << 32) | (0xffffffffu - static_cast<uint32_t>(i));
}
// key_of(l, i) >= k by 32-bit compares: the logit's bits, and the id's only where they tie k's.
__device__ __forceinline__ bool key_at_least(float l, int i, uint64_t k) {
  const uint32_t b = order_bits(l), k_hi = static_cast<uint32_t>(k >> 32);
  return b > k_hi || (b == k_hi && 0xffffffffu - static_cast<uint32_t>(i) >= static_cast<uint32_t>(k));
}
__device__ __forceinline__ int id_of(uint64_t key) {
  return static_cast<int>(0xffffffffu - static_cast<uint32_t>(key));
}
__device__ __forceinline__ float value_of(uint64_t key) {
  const auto b = static_cast<uint32_t>(key >> 32);
  return __uint_as_float((b & 0x80000000u) ? (b & 0x7fffffffu) : ~b);
}

// A row's (or block's) largest key, with exp(l - mx) summed under its logit mx.
struct RowStats {
  uint64_t best;
  float s1;
};

struct Shared {
  uint64_t band[kBand];  // a cut's band, sorted descending
  union {                // read by the cluster's blocks:
    uint64_t list[kBand];  // this block's keys of a band, unsorted
    struct {
      unsigned long long mass[kBins];  // in kMassUnit
      unsigned count[kBins];
    } hist;  // this block's mass histogram
  };
  uint64_t u64[kWarps];
  float f32[kWarps], g32[kWarps];
  RowStats x_stats[2];  // a block's totals for the cluster, two slots of each kind used in turn
  float2 x_f32[2];
  int list_n;
  int pick_rank, pick_warp;  // the draw's block and warp, -1 if nothing is kept
  float target, pick_base;   // the draw's target mass, and the kept mass before the picked warp's range
  float bin_n_above, bin_f_above, bin_n;  // the top-p cut's bin: the keys above it, their mass, its keys
  int chosen;
};

// The blocks of a row: a thread-block cluster where the kernel runs sm_90 code (a launch without clusters is a
// cluster of one), else the one block. `turn` picks the exchange slot (Shared::x_*) the next exchange uses.
struct Row {
  const float* l;  // [v]
  int v;
  int rank, size;
  int turn = 0;

  __device__ void sync() const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cooperative_groups::this_cluster().sync();
#else
    __syncthreads();
#endif
  }
  // p, an address in this block's shared memory, in block b's.
  template <class T>
  __device__ T* at(T* p, int b) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    return cooperative_groups::this_cluster().map_shared_rank(p, b);
#else
    return p;
#endif
  }
};

// The row's warp w's ids [begin, end): contiguous ranges of a multiple of 4 ids, so that an aligned row's ranges are
// aligned.
__device__ __forceinline__ int warp_begin(const Row& r, int w) {
  const int n_warps = kWarps * r.size, c = (r.v + n_warps * 4 - 1) / (n_warps * 4) * 4;
  return min(r.v, w * c);
}
__device__ __forceinline__ int row_warp(const Row& r) { return r.rank * kWarps + static_cast<int>(threadIdx.x >> 5); }

// f(x, i) for every logit x = l[i] of this warp's range, each lane four at a time by 16-byte loads (a batch of them in
// flight) where the row is aligned.
template <class F>
__device__ __forceinline__ void for_each_logit(const Row& r, F&& f) {
  constexpr int kBatch = 2;
  const int lane = threadIdx.x & 31, w = row_warp(r);
  const int b = warp_begin(r, w), e = warp_begin(r, w + 1);
  const float* l = r.l + b;
  int i = b + lane;
  if ((reinterpret_cast<uintptr_t>(l) & 15) == 0) {
    const int n4 = (e - b) / 4;
    const float4* l4 = reinterpret_cast<const float4*>(l);
    for (int j0 = lane; j0 < n4; j0 += 32 * kBatch) {
      float4 q[kBatch];
#pragma unroll
      for (int k = 0; k < kBatch; ++k)
        if (j0 + 32 * k < n4) q[k] = l4[j0 + 32 * k];
#pragma unroll
      for (int k = 0; k < kBatch; ++k) {
        const int j = j0 + 32 * k, at = b + 4 * j;
        if (j >= n4) break;
        f(q[k].x, at), f(q[k].y, at + 1), f(q[k].z, at + 2), f(q[k].w, at + 3);
      }
    }
    i = b + 4 * n4 + lane;
  }
  for (; i < e; i += 32) f(l[i - b], i);
}

__device__ __forceinline__ uint64_t warp_max_u64(uint64_t v) {
  for (int o = 16; o > 0; o >>= 1) {
    const uint64_t w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}

__device__ uint64_t block_max_u64(uint64_t v, Shared& sh) {
  v = warp_max_u64(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh.u64[threadIdx.x >> 5] = v;
  __syncthreads();
  return warp_max_u64(sh.u64[threadIdx.x & 31]);
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

// Block `lane`'s total in every lane under the row's size (`none` in the others), in every block, where each block
// gives its own (thread 0's `mine`): it leaves it in a slot, and after a cluster barrier every warp reads the blocks'
// slots a lane each, so that reducing them over the lanes gives the same values in the same order in every block. The
// two slots of a kind are used in turn: one is written again two exchanges later, after the barrier of the next
// exchange, which no block passes before every block has read it.
template <class T>
__device__ T exchange(Row& r, T (&slots)[2], const T& mine, const T& none) {
  T* slot = &slots[r.turn];
  r.turn ^= 1;
  if (threadIdx.x == 0) *slot = mine;
  r.sync();
  const int lane = threadIdx.x & 31;
  return lane < r.size ? *r.at(slot, lane) : none;
}

// Two sums over the row: the block's, then (in a cluster) combined over the blocks.
__device__ float2 row_sum2(float a, float b, Row& r, Shared& sh) {
  float2 t = block_sum2(a, b, sh);
  if (r.size == 1) return t;
  t = exchange(r, sh.x_f32, t, float2{0, 0});
  return {warp_sum(t.x), warp_sum(t.y)};
}

// The row's RowStats from each thread's largest key (0 if none), its logit m and its sum under m: each block's, then
// (in a cluster) the blocks' combined in one exchange.
__device__ RowStats row_stats(uint64_t key, float m, float s1, Row& r, Shared& sh) {
  RowStats b{block_max_u64(key, sh), 0};
  const float mb = value_of(b.best);
  b.s1 = block_sum2(key != 0 ? s1 * __expf(m - mb) : 0.0f, 0.0f, sh).x;  // no key: m is -inf and the sum 0
  if (r.size == 1) return b;
  const RowStats o = exchange(r, sh.x_stats, b, RowStats{0, 0});
  const uint64_t best = warp_max_u64(o.best);
  return {best, warp_sum(o.best != 0 ? o.s1 * __expf(value_of(o.best) - value_of(best)) : 0.0f)};
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

// The count (x) and probability mass exp((l - mx) / t) (y, when kMass) of the row's keys >= k.
template <bool kMass>
__device__ float2 above(Row& r, float mx, float inv_t, uint64_t k, Shared& sh) {
  float n = 0, m = 0;
  for_each_logit(r, [&](float x, int i) {
    if (key_at_least(x, i, k)) {
      n += 1.0f;
      if (kMass) m += __expf((x - mx) * inv_t);
    }
  });
  return row_sum2(n, m, r, sh);
}

// A threshold in (lo, hi]: halfway in logit value where both ends are finite and apart, else halfway in key space.
__device__ uint64_t midpoint(uint64_t lo, uint64_t hi, bool by_value) {
  const uint64_t by_key = lo + (hi - lo) / 2 + 1;
  const float a = value_of(lo), b = value_of(hi);
  if (!by_value || !isfinite(a) || !isfinite(b) || !(a < b)) return by_key;
  const uint64_t k = uint64_t{order_bits(0.5f * a + 0.5f * b)} << 32;  // the smallest key of that value
  return k > lo && k <= hi ? k : by_key;
}

__device__ void sort_band(int n, Shared& sh);

// Gathers the keys of the row's n tokens where in(l, i) (n <= kBand) into every block's sh.band, sorted descending (a
// bitonic sort). In a cluster each block lists its own, and after a cluster barrier copies every block's list in rank
// order.
template <class In>
__device__ void gather_sorted(const Row& r, int n, const In& in, Shared& sh) {
  const bool own = r.size == 1;
  if (!own) r.sync();  // no block still reads the lists (or histograms) before
  if (threadIdx.x == 0) sh.list_n = 0;
  __syncthreads();
  uint64_t* dst = own ? sh.band : sh.list;
  for_each_logit(r, [&](float x, int i) {
    if (in(x, i)) {
      const int at = atomicAdd(&sh.list_n, 1);
      if (at < kBand) dst[at] = key_of(x, i);
    }
  });
  if (!own) {
    r.sync();  // every block's list is complete
    for (int b = 0, base = 0; b < r.size; ++b) {
      const int nb = min(*r.at(&sh.list_n, b), kBand - base);
      const uint64_t* src = r.at(sh.list, b);
      for (int j = static_cast<int>(threadIdx.x); j < nb; j += kThreads) sh.band[base + j] = src[j];
      base += nb;
    }
  }
  __syncthreads();
  sort_band(n, sh);
}

// gather_sorted of the n keys in [lo, hi].
__device__ void gather_range(const Row& r, uint64_t lo, uint64_t hi, int n, Shared& sh) {
  gather_sorted(
      r, n,
      [&](float x, int i) {
        const uint64_t k = key_of(x, i);
        return k >= lo && k <= hi;
      },
      sh);
}

// Sorts sh.band[0, n) descending (a bitonic sort; n <= kBand); the caller's threads have all written it.
__device__ void sort_band(int n, Shared& sh) {
  int p = 1;
  while (p < n) p <<= 1;
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

// The first j < n whose running sum base + term(0) + ... + term(j) reaches target_of(the terms' total) (terms summed in
// band order, a block scan), else (float rounding) n - 1.
template <class Term, class Target>
__device__ int band_first_reaching(int n, float base, const Term& term, const Target& target_of, Shared& sh) {
  const int j0 = 2 * static_cast<int>(threadIdx.x), j1 = j0 + 1;
  const float t0 = j0 < n ? term(j0) : 0.0f, t1 = j1 < n ? term(j1) : 0.0f;
  const float inc1 = base + block_inclusive_scan(t0 + t1, sh), inc0 = inc1 - t1;
  const float target = target_of(sh.f32[kWarps - 1]);  // the scan leaves the block's total there
  const int first = j0 < n && inc0 >= target ? j0 : j1 < n && inc1 >= target ? j1 : INT_MAX;
  const uint64_t at = block_max_u64(first == INT_MAX ? 0 : kBand - first, sh);  // the first, as kBand - j
  return at > 0 ? kBand - static_cast<int>(at) : n - 1;
}

// A cut: its key, its index in sh.band, and how many keys above it the band lacks (0: sh.band[0, index] holds every key
// >= key).
struct Cut {
  uint64_t key;
  int index;
  float n_above;
};

// The largest key K in [lo, hi] with f(K) >= target, f(K) being the count (kMass false) or the probability mass of
// the keys >= K; f(lo) >= target and n_lo keys are >= lo. Passes narrow [lo, hi] until at most kBand keys lie in it
// (the keys above hi count n_above, weigh f_above < target); the band, sorted, holds the cut at the first key whose
// prefix sum brings f_above to the target. Every block of the row finds the same cut.
template <bool kMass>
__device__ Cut cut(Row& r, float mx, float inv_t, uint64_t lo, uint64_t hi, float n_lo, float target, Shared& sh) {
  float n_above = 0, f_above = 0;
  bool by_value = true;
  while (n_lo - n_above > kBand) {
    const uint64_t mid = midpoint(lo, hi, by_value);
    const float2 a = above<kMass>(r, mx, inv_t, mid, sh);
    const float f = kMass ? a.y : a.x, before = n_lo - n_above;
    if (f >= target)
      lo = mid, n_lo = a.x;
    else
      hi = mid - 1, n_above = a.x, f_above = f;
    by_value = n_lo - n_above <= 0.75f * before;  // value halving while it narrows the band, else key halving
  }
  const int n = static_cast<int>(n_lo - n_above);
  gather_range(r, lo, hi, n, sh);
  const auto term = [&](int j) { return kMass ? __expf((value_of(sh.band[j]) - mx) * inv_t) : 1.0f; };
  const int j = band_first_reaching(
      n, f_above, term, [&](float) { return target; }, sh);
  return {sh.band[j], j, n_above};
}

// cut<kMass>'s cut over the keys >= floor (n_kept of them; the target: `goal` keys, or `goal` of their mass) from a
// histogram. One pass bins the keys by their distance below the max, (mx - l) (by mass: (mx - l) / t) times
// kBinsPerNat, summing each bin's count and mass (in fixed point: exact in any order) over the cluster; the first bin
// whose running count (or mass) from the top reaches the target holds the cut. Where that bin and those above it hold
// at most kBand keys, they are gathered (the band then holds every key >= the cut), else where the bin alone does, it
// is (the keys above it counted); the cut is read off the band. A bin of more (ties, a flat row) leaves the cut to
// cut<kMass>.
template <bool kMass>
__device__ Cut hist_cut(Row& r, float mx, float inv_t, uint64_t floor, uint64_t best, float n_kept, float goal,
                        Shared& sh) {
  if (r.size > 1) r.sync();                     // no block still reads this block's list
  const int b = static_cast<int>(threadIdx.x);  // this thread's bin
  sh.hist.mass[b] = 0, sh.hist.count[b] = 0;
  __syncthreads();
  const float scale = (kMass ? inv_t : 1.0f) * kBinsPerNat;
  const auto bin_of = [&](float x) {
    const float d = (mx - x) * scale;
    return d < static_cast<float>(kBins - 1) ? static_cast<int>(d) : kBins - 1;  // -inf: the last
  };
  const auto kept = [&](float x, int i) { return floor == 0 || key_at_least(x, i, floor); };
  for_each_logit(r, [&](float x, int i) {
    if (!kept(x, i)) return;
    const int k = bin_of(x);
    if (kMass) atomicAdd(&sh.hist.mass[k], __float2ull_rn(__expf((x - mx) * inv_t) * kMassUnit));
    atomicAdd(&sh.hist.count[k], 1u);
  });
  r.sync();  // every block's histogram is complete
  unsigned long long m = 0;
  unsigned c = 0;
  for (int k = 0; k < r.size; ++k) {
    if (kMass) m += r.at(sh.hist.mass, k)[b];
    c += r.at(sh.hist.count, k)[b];
  }
  const float count = static_cast<float>(c), count_inc = block_inclusive_scan(count, sh);
  float f = count, f_inc = count_inc, target = goal;
  if (kMass) {
    f = __ull2float_rn(m) / kMassUnit, f_inc = block_inclusive_scan(f, sh);
    target = goal * sh.f32[kWarps - 1];  // the scan leaves the total there
  }
  // The last bin's running sum is the total, which reaches the target.
  const int cut_bin = kBins - static_cast<int>(block_max_u64(f_inc >= target ? kBins - b : 0, sh));
  if (b == cut_bin) sh.bin_n_above = count_inc - count, sh.bin_f_above = f_inc - f, sh.bin_n = count;
  __syncthreads();
  const float n_above = sh.bin_n_above, f_above = sh.bin_f_above, n_bin = sh.bin_n;
  const bool through = n_above + n_bin <= kBand;  // the bins through the cut's fit a band
  if (!through && n_bin > kBand) return cut<kMass>(r, mx, inv_t, floor, best, n_kept, target, sh);
  const int n = static_cast<int>(through ? n_above + n_bin : n_bin);
  gather_sorted(
      r, n,
      [&](float x, int i) {
        const int k = bin_of(x);
        return kept(x, i) && (k == cut_bin || (through && k < cut_bin));
      },
      sh);
  const auto term = [&](int j) { return kMass ? __expf((value_of(sh.band[j]) - mx) * inv_t) : 1.0f; };
  const int j = band_first_reaching(
      n, through ? 0.0f : f_above, term, [&](float) { return target; }, sh);
  return {sh.band[j], j, through ? 0.0f : n_above};
}

// The kept token a draw of u lands on, in id order, where sh.band[0, n) holds every key kept by the cuts (-1 if min_p
// keeps none): the band sorted again by id, the probabilities scanned in that order.
__device__ int draw_in_band(int n, float mx, float inv_t, float min_p, float u, Shared& sh) {
  constexpr uint64_t kLow = 0xffffffffu;
  for (int j = static_cast<int>(threadIdx.x); j < n; j += kThreads)  // (inverted id, order bits): by id, ascending
    sh.band[j] = (sh.band[j] << 32) | (sh.band[j] >> 32);
  __syncthreads();
  sort_band(n, sh);
  const auto q = [&](int j) {
    const float p = __expf((value_of(sh.band[j] << 32) - mx) * inv_t);
    return p >= min_p ? p : 0.0f;
  };
  const int j0 = 2 * static_cast<int>(threadIdx.x), j1 = j0 + 1;
  const float q0 = j0 < n ? q(j0) : 0.0f, q1 = j1 < n ? q(j1) : 0.0f;
  const float inc1 = block_inclusive_scan(q0 + q1, sh), inc0 = inc1 - q1;
  const float target = u * sh.f32[kWarps - 1];  // the scan leaves the block's total there
  // The first kept token whose running sum passes the target, else (float rounding) the last kept one.
  const int first = q0 > 0 && target < inc0 ? j0 : q1 > 0 && target < inc1 ? j1 : INT_MAX;
  const uint64_t at = block_max_u64(first == INT_MAX ? 0 : kBand - first, sh);
  const int last = q1 > 0 ? j1 : q0 > 0 ? j0 : -1;
  const int j = at > 0 ? kBand - static_cast<int>(at) : static_cast<int>(block_max_u64(last + 1, sh)) - 1;
  return j < 0 ? -1 : static_cast<int>(kLow - (sh.band[j] >> 32));
}

// Of the masses w over the lanes (one a lane, in order, after `base`), the lane holding the target: the first whose
// running sum passes it, else (float rounding) the last with mass, -1 if none has any. Sets *below to the running
// sum before that lane.
__device__ __forceinline__ int lane_holding(float w, float base, float target, int lane, float* below) {
  constexpr unsigned kAll = 0xffffffffu;
  const float inc = base + warp_inclusive_sum(w, lane);
  const unsigned past = __ballot_sync(kAll, w > 0 && target < inc), mass = __ballot_sync(kAll, w > 0);
  const int at = past ? __ffs(static_cast<int>(past)) - 1 : mass ? 31 - __clz(static_cast<int>(mass)) : -1;
  *below = __shfl_sync(kAll, inc - w, at < 0 ? 0 : at);
  return at;
}

// The kept token a draw of u lands on, in id order (-1 if nothing is kept), in the block that holds it (-2 in the
// others): own is the kept mass of this thread's warp's range. The block, then the warp, whose range holds the target
// u * total is found from the blocks' and warps' masses; that warp walks its range 128 ids a step (a warp scan a
// step), kept_q(x, i) giving a token's probability if kept, else 0. A target past every sum (float rounding) takes
// the last kept token before it.
template <class Q>
__device__ int draw(Row& r, const Q& kept_q, float own, float u, Shared& sh) {
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // every thread is done with sh.f32
  if (lane == 0) sh.f32[warp] = own;
  __syncthreads();
  float block_total = 0;  // warp 0: the block's kept mass, its warps' in order
  if (warp == 0) block_total = __shfl_sync(kAll, warp_inclusive_sum(sh.f32[lane], lane), 31);
  const float w_block = exchange(r, sh.x_f32, float2{block_total, 0}, float2{0, 0}).x;  // block lane's kept mass
  if (warp == 0) {
    float base = 0;
    const float target = u * __shfl_sync(kAll, warp_inclusive_sum(w_block, lane), 31);
    const int pick_rank = lane_holding(w_block, 0, target, lane, &base);
    int pick_warp = -1;
    if (pick_rank == r.rank) pick_warp = lane_holding(sh.f32[lane], base, target, lane, &base);
    if (lane == 0) sh.pick_rank = pick_rank, sh.pick_warp = pick_warp, sh.target = target, sh.pick_base = base;
  }
  __syncthreads();
  if (sh.pick_rank < 0) return -1;
  if (sh.pick_rank != r.rank) return -2;
  if (warp == sh.pick_warp) {
    const float target = sh.target;
    float run = sh.pick_base;
    const int e = warp_begin(r, row_warp(r) + 1);
    int pick = -1;
    for (int c = warp_begin(r, row_warp(r)); c < e; c += 128) {
      float q[4], mine = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int i = c + 4 * lane + k;
        q[k] = i < e ? kept_q(r.l[i], i) : 0.0f;
        mine += q[k];
      }
      const float inc = warp_inclusive_sum(mine, lane);
      const unsigned crossing = __ballot_sync(kAll, mine > 0 && target < run + inc);
      const unsigned has = __ballot_sync(kAll, mine > 0);
      // The lane that holds the pick walks its four; with none crossing, the last lane with mass gives the step's last
      // kept token.
      const int src = crossing ? __ffs(static_cast<int>(crossing)) - 1 : has ? 31 - __clz(static_cast<int>(has)) : -1;
      if (src >= 0) {
        int p = -1;
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
  return sh.chosen;
}

// Rows of `cluster` blocks each: grid n * cluster, the row's blocks consecutive.
__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* logits, const float* params, int64_t v, int32_t* ids, float* logprobs, int64_t ld_lp,
                  int32_t* top_ids, int64_t n_top, int cluster) {
  __shared__ Shared sh;
  const int64_t row = blockIdx.x / cluster;
  Row r{logits + row * v, static_cast<int>(v), static_cast<int>(blockIdx.x % cluster), cluster};
  const float* l = r.l;
  const float* p = params + row * 5;
  const float t = p[0], top_k = floorf(p[1]), top_p = p[2], min_p = p[3], u = p[4];
  const float inv_t = t > 0 ? 1.0f / t : 1.0f;
  const bool sampled = t > 0 && top_k != 1, top_k_cut = top_k > 0 && top_k < static_cast<float>(v);
  const bool keeps_all = sampled && !top_k_cut && top_p >= 1 && min_p <= 0;  // a draw over every token
  // One pass: each thread's running max m (its first id where it ties) and its sums of exp(l - m) (and, for a draw
  // that keeps every token, exp((l - m) / t)) under it; -inf and NaN add nothing and are never the max.
  float m = -INFINITY, s1 = 0, st = 0;
  int at = -1;
  for_each_logit(r, [&](float x, int i) {
    if (x > m) {
      s1 = s1 * __expf(m - x) + 1.0f;
      if (keeps_all) st = st * __expf((m - x) * inv_t) + 1.0f;
      m = x, at = i;
    } else if (x > -INFINITY) {
      s1 += __expf(x - m);
      if (keeps_all) st += __expf((x - m) * inv_t);
    }
  });
  const RowStats st_row = row_stats(at < 0 ? 0 : key_of(m, at), m, s1, r, sh);
  uint64_t best = st_row.best;
  float mx = value_of(best);
  if (best == 0) best = key_of(l[0], 0), mx = l[0];  // no logit above -inf: token 0
  const float lse = mx + logf(st_row.s1);
  // The n_top most likely, in order.
  if (n_top > 0) {
    bool whole = false;  // the band holds the n_top already
    uint64_t kn = 0;
    if (n_top < v) {
      const Cut c = hist_cut<false>(r, mx, inv_t, 0, best, static_cast<float>(v), static_cast<float>(n_top), sh);
      kn = c.key, whole = c.n_above == 0;
    }
    if (!whole) gather_range(r, kn, best, static_cast<int>(n_top), sh);
    for (int64_t j = threadIdx.x; r.rank == 0 && j < n_top; j += kThreads) {
      top_ids[row * n_top + j] = id_of(sh.band[j]);
      logprobs[row * ld_lp + 1 + j] = value_of(sh.band[j]) - lse;
    }
  }
  int chosen = r.rank == 0 ? id_of(best) : -2;  // -2: another block writes the row's choice
  if (sampled) {
    uint64_t floor = 0;  // kept: key >= floor
    float n_kept = static_cast<float>(v);
    int band_n = 0;  // > 0: sh.band[0, band_n) holds every key >= floor
    if (top_k_cut) {
      const Cut c = hist_cut<false>(r, mx, inv_t, 0, best, n_kept, top_k, sh);
      floor = c.key, n_kept = top_k;
      if (c.n_above == 0)
        band_n = c.index + 1;
      else if (top_k <= kBand)
        gather_range(r, floor, best, static_cast<int>(top_k), sh), band_n = static_cast<int>(top_k);
    }
    if (top_p < 1 && band_n > 0) {  // the smallest prefix of the band whose mass reaches top_p of the band's
      const auto term = [&](int j) { return __expf((value_of(sh.band[j]) - mx) * inv_t); };
      band_n = band_first_reaching(
                   band_n, 0.0f, term, [&](float z) { return top_p * z; }, sh) +
               1;
      floor = sh.band[band_n - 1];
    } else if (top_p < 1) {
      const Cut c = hist_cut<true>(r, mx, inv_t, floor, best, n_kept, top_p, sh);
      floor = c.key;
      const float n_cut = c.n_above + static_cast<float>(c.index + 1);  // keys >= the cut
      if (c.n_above == 0)
        band_n = c.index + 1;
      else if (n_cut <= kBand)
        gather_range(r, floor, best, static_cast<int>(n_cut), sh), band_n = static_cast<int>(n_cut);
    }
    int pick;
    if (band_n > 0) {
      pick = draw_in_band(band_n, mx, inv_t, min_p, u, sh);
    } else {  // every token, or more than a band, kept: a pass for the kept mass, then a walk in id order
      // Kept: key >= floor and probability >= min_p (the largest is exp(0) = 1).
      const auto kept_q = [&](float x, int i) {
        if (floor != 0 && !key_at_least(x, i, floor)) return 0.0f;
        const float q = __expf((x - mx) * inv_t);
        return q >= min_p ? q : 0.0f;
      };
      float own = at < 0 ? 0.0f : st * __expf((m - mx) * inv_t);  // every token kept: the first pass's sums
      if (!keeps_all) {
        own = 0;
        for_each_logit(r, [&](float x, int i) { own += kept_q(x, i); });
      }
      pick = draw(r, kept_q, warp_sum(own), u, sh);
    }
    if (pick != -1) chosen = r.rank == 0 || band_n == 0 ? pick : -2;
  }
  if (threadIdx.x == 0 && chosen >= 0) {
    ids[row] = chosen;
    logprobs[row * ld_lp] = l[chosen] - lse;
  }
  if (r.size > 1) r.sync();  // no block leaves while another may read its shared memory
}

// The blocks a row takes: a cluster of up to kMaxCluster (a power of two) where the device runs clusters of this
// kernel, no more than leave each thread 8 logits and keep the rows' blocks one an SM.
Result<int> cluster_size(const CudaStream& cs, int64_t n, int64_t v) {
  static const Result<int> largest = [&]() -> Result<int> {  // the largest cluster the device runs at all
    for (int c = std::min(kMaxCluster, cs.max_cluster_blocks()); c > 1; c /= 2) {
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim = {static_cast<unsigned>(c), 1, 1};
      cudaLaunchConfig_t cfg{};
      cfg.gridDim = dim3(static_cast<unsigned>(c));
      cfg.blockDim = dim3(kThreads);
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      int clusters = 0;
      if (cudaOccupancyMaxActiveClusters(&clusters, sample_kernel, &cfg) == cudaSuccess && clusters > 0) return c;
      cudaGetLastError();  // a size the device does not take is not an error of the op
    }
    return 1;
  }();
  if (!largest.ok()) return largest.status();
  const int64_t by_vocab = v / (int64_t{kThreads} * 8), by_rows = cs.n_sm() / n;
  const int64_t c = std::max<int64_t>(1, std::min({int64_t{*largest}, by_vocab, by_rows}));
  return static_cast<int>(std::bit_floor(static_cast<uint64_t>(c)));
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
  if (n * kMaxCluster > INT32_MAX) return shape_error("sample", "too many rows");
  const CudaStream& cs = cuda_stream(s);
  FT_ASSIGN_OR_RETURN(const int cluster, cluster_size(cs, n, logits.dim(1)));
  return cuda_status(launch_pdl_in_clusters(false, dim3(static_cast<unsigned>(cluster)), sample_kernel,
                                            dim3(static_cast<unsigned>(n * cluster)), dim3(kThreads), 0, cs.get(),
                                            logits.ptr<const float>(), params.ptr<const float>(), logits.dim(1),
                                            ids.ptr<int32_t>(), logprobs.ptr<float>(), logprobs.dim(1),
                                            n_top > 0 ? top_ids.ptr<int32_t>() : nullptr, n_top, cluster),
                     "sample");
}

}  // namespace ft::cuda
