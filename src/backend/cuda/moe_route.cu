// moe_route: one warp per token. Softmax or sigmoid scores in fp32, optional correction bias for selection
// only, grouped top-k (DeepSeek: groups ranked by the sum of their top-2 biased scores, experts outside the
// topk_group best get 0), then k rounds of a warp arg-max (ties to the lowest index, as the CPU op),
// renormalisation and scaling. Ids come out by descending selection score. Ungrouped routing over up to 256
// experts ranks every expert at once instead (moe_route_fast_kernel).
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/pdl.cuh"

namespace ft::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int64_t kMaxExperts = 1024;
constexpr int64_t kMaxGroups = 64;

struct RouteArgs {
  const float* logits;
  int64_t logits_ld;
  const float* bias;  // [n_expert] or null
  int32_t* ids;
  int64_t ids_ld;
  float* weights;
  int64_t weights_ld;
  int64_t n, n_expert, k, n_group, topk_group;
  bool sigmoid, norm_topk;
  float scale;
};

// (value, index) of the largest v[i] over this lane's i = lane + 32 r < n, reduced over the warp; ties to
// the lowest index.
__device__ __forceinline__ int64_t warp_arg_max(const float* v, int64_t n, int lane) {
  float best = -INFINITY;
  int64_t idx = -1;
  for (int64_t i = lane; i < n; i += 32)
    if (idx < 0 || v[i] > best) best = v[i], idx = i;
  for (int o = 16; o > 0; o >>= 1) {
    const float ob = __shfl_xor_sync(0xffffffffu, best, o);
    const int64_t oi = __shfl_xor_sync(0xffffffffu, idx, o);
    if (oi >= 0 && (idx < 0 || ob > best || (ob == best && oi < idx))) best = ob, idx = oi;
  }
  return idx;
}

__global__ void __launch_bounds__(kWarps * 32) moe_route_kernel(RouteArgs a) {
  extern __shared__ float smem[];  // per warp: score [n_expert], choice [n_expert], group score [kMaxGroups]
  pdl_wait_then_release();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t t = blockIdx.x * int64_t{kWarps} + warp;
  if (t >= a.n) return;
  float* score = smem + warp * (2 * a.n_expert + kMaxGroups);
  float* choice = score + a.n_expert;
  float* group = choice + a.n_expert;
  const float* lg = a.logits + t * a.logits_ld;
  if (a.sigmoid) {
    for (int64_t e = lane; e < a.n_expert; e += 32) score[e] = 1.0f / (1.0f + expf(-lg[e]));
  } else {
    float mx = -INFINITY;
    for (int64_t e = lane; e < a.n_expert; e += 32) mx = fmaxf(mx, lg[e]);
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int64_t e = lane; e < a.n_expert; e += 32) sum += score[e] = expf(lg[e] - mx);
    sum = warp_sum(sum);
    for (int64_t e = lane; e < a.n_expert; e += 32) score[e] /= sum;
  }
  for (int64_t e = lane; e < a.n_expert; e += 32) choice[e] = a.bias ? score[e] + a.bias[e] : score[e];
  __syncwarp();
  if (a.n_group > 1) {
    const int64_t gs = a.n_expert / a.n_group;
    for (int64_t g = lane; g < a.n_group; g += 32) {
      float b1 = -INFINITY, b2 = -INFINITY;
      for (int64_t e = g * gs; e < (g + 1) * gs; ++e) {
        if (choice[e] > b1) b2 = b1, b1 = choice[e];
        else if (choice[e] > b2) b2 = choice[e];
      }
      group[g] = b1 + b2;
    }
    __syncwarp();
    uint64_t keep = 0;  // bit g: group g is among the topk_group best
    for (int64_t r = 0; r < a.topk_group; ++r) {
      const int64_t g = warp_arg_max(group, a.n_group, lane);
      keep |= uint64_t{1} << g;
      __syncwarp();
      if (lane == 0) group[g] = -INFINITY;
      __syncwarp();
    }
    for (int64_t e = lane; e < a.n_expert; e += 32)
      if (!((keep >> (e / gs)) & 1)) choice[e] = 0.0f;
    __syncwarp();
  }
  int32_t* ids = a.ids + t * a.ids_ld;
  float* w = a.weights + t * a.weights_ld;
  for (int64_t j = 0; j < a.k; ++j) {
    const int64_t e = warp_arg_max(choice, a.n_expert, lane);
    __syncwarp();
    if (lane == 0) {
      ids[j] = static_cast<int32_t>(e);
      w[j] = score[e];
      choice[e] = -INFINITY;  // taken
    }
    __syncwarp();
  }
  if (lane == 0) {
    float sum = 0.0f;
    for (int64_t j = 0; j < a.k; ++j) sum += w[j];
    const float denom = a.sigmoid ? sum + 1e-20f : sum;
    for (int64_t j = 0; j < a.k; ++j) w[j] = (a.norm_topk ? w[j] / denom : w[j]) * a.scale;
  }
}

constexpr int kFastMaxExperts = 256;  // the rank path: a block per token, a thread per expert

// A float's order as an unsigned key (larger float, larger key); -0 is folded into +0 so that they tie.
__device__ __forceinline__ uint32_t order_key(float v) {
  const uint32_t u = __float_as_uint(v + 0.0f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Max (kMax) or sum over the block (at most kFastMaxExperts threads) with one barrier: every thread reads the warps'
// partial results itself, in warp order. red: kFastMaxExperts / 32 floats of shared memory that no other reduction
// of the kernel uses (common.cuh's block_sum and block_max reuse theirs at the cost of a second barrier).
template <bool kMax>
__device__ __forceinline__ float route_block_reduce(float v, float* red) {
  v = kMax ? warp_max(v) : warp_sum(v);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w) v = kMax ? fmaxf(v, red[w]) : v + red[w];
  return v;
}

// Ungrouped routing of token blockIdx.x, expert threadIdx.x: the scores by block reductions, then every expert's
// rank counted against all the experts at once: rank = how many experts have a larger 64-bit key (the selection
// key above, 0xffffffff - id below, so that an equal score goes to the lower id). The experts ranked below k are the
// picks, in rank order. One round of independent compares instead of k dependent warp arg-max rounds (a token of
// Qwen3-30B-A3B: 2.2 us added a layer against 3.9; docs/perf.md). Same selections, ties and weights as
// moe_route_kernel.
__global__ void __launch_bounds__(kFastMaxExperts) moe_route_fast_kernel(RouteArgs a) {
  __shared__ float red_max[kFastMaxExperts / 32], red_sum[kFastMaxExperts / 32];
  __shared__ __align__(16) uint64_t keys[kFastMaxExperts];  // [blockDim.x]: 0 past n_expert, below every expert's
  __shared__ int32_t pick_id[32];
  __shared__ float pick_w[32];
  const int e = static_cast<int>(threadIdx.x), n_expert = static_cast<int>(a.n_expert), k = static_cast<int>(a.k);
  const bool valid = e < n_expert;
  const float bias = valid && a.bias ? a.bias[e] : 0.0f;  // a weight: read before the wait
  pdl_wait_then_release();
  const int64_t t = blockIdx.x;
  const float lg = valid ? a.logits[t * a.logits_ld + e] : -INFINITY;
  float score;
  if (a.sigmoid) {
    score = 1.0f / (1.0f + expf(-lg));
  } else {
    const float mx = route_block_reduce<true>(lg, red_max);
    const float ex = valid ? expf(lg - mx) : 0.0f;
    score = ex / route_block_reduce<false>(ex, red_sum);
  }
  const uint64_t key =
      valid ? uint64_t{order_key(a.bias ? score + bias : score)} << 32 | (0xffffffffu - static_cast<uint32_t>(e)) : 0;
  keys[e] = key;
  __syncthreads();
  if (valid) {
    int r[2] = {};  // two partial counts: the adds stay independent
    const ulonglong2* k2 = reinterpret_cast<const ulonglong2*>(keys);
#pragma unroll 8
    for (int j = 0; j < static_cast<int>(blockDim.x) / 2; ++j) {
      const ulonglong2 q = k2[j];
      r[0] += q.x > key;
      r[1] += q.y > key;
    }
    const int rank = r[0] + r[1];
    if (rank < k) pick_id[rank] = e, pick_w[rank] = score;
  }
  __syncthreads();
  if (e >= 32) return;
  float sum = 0.0f;  // in pick order, as the other kernel and the CPU op
  for (int j = 0; j < k; ++j) sum += pick_w[j];
  const float denom = a.sigmoid ? sum + 1e-20f : sum;
  if (e < k) {
    a.ids[t * a.ids_ld + e] = pick_id[e];
    a.weights[t * a.weights_ld + e] = (a.norm_topk ? pick_w[e] / denom : pick_w[e]) * a.scale;
  }
}

}  // namespace

Status moe_route(const Tensor& logits,   // [n, n_expert] f32
                 const Tensor& bias,     // [n_expert] f32 or undefined
                 const Tensor& ids,      // [n, k] i32
                 const Tensor& weights,  // [n, k] f32
                 const MoeRouteParams& p, Stream& s) {
  FT_RETURN_IF_ERROR(device_check("moe_route", {&logits, &bias, &ids, &weights}));
  if (logits.dtype != DType::kF32) return dtype_error("moe_route", "logits", logits);
  if (bias.defined() && bias.dtype != DType::kF32) return dtype_error("moe_route", "bias", bias);
  if (ids.dtype != DType::kI32 || weights.dtype != DType::kF32) return dtype_error("moe_route", "ids/weights", ids);
  if (logits.ndim != 2 || ids.ndim != 2 || weights.ndim != 2) return shape_error("moe_route", "2-d tensors expected");
  const int64_t n = logits.dim(0), n_expert = logits.dim(1), k = p.n_expert_used;
  const int64_t group_size = p.n_group > 0 ? n_expert / p.n_group : 0;
  if (n_expert > kMaxExperts || k < 1 || k > n_expert || ids.dim(0) != n || ids.dim(1) != k ||
      !same_shape(ids, weights) || (bias.defined() && bias.numel() != n_expert))
    return shape_error("moe_route", "logits, bias, ids and weights do not match");
  if (p.n_group < 1 || p.n_group > kMaxGroups || n_expert % p.n_group != 0 || p.topk_group < 1 ||
      p.topk_group > p.n_group || (p.n_group > 1 && (group_size < 2 || k > p.topk_group * group_size)))
    return shape_error("moe_route", "bad grouping");
  if (n == 0) return ok_status();
  if (n > INT32_MAX) return shape_error("moe_route", "more than 2^31 - 1 tokens");
  const RouteArgs a{logits.ptr<const float>(), logits.stride[0], bias.defined() ? bias.ptr<const float>() : nullptr,
                    ids.ptr<int32_t>(), ids.stride[0], weights.ptr<float>(), weights.stride[0], n, n_expert, k,
                    p.n_group, p.topk_group, p.scoring == RouterScoring::kSigmoid, p.norm_topk, p.scale};
  const size_t smem = kWarps * (2 * n_expert + kMaxGroups) * sizeof(float);
  const CudaStream& cs = cuda_stream(s);
  const bool fast = p.n_group == 1 && n_expert <= kFastMaxExperts && k <= 32;
  const unsigned fast_block = static_cast<unsigned>((n_expert + 31) / 32 * 32);
  return cuda_status(
      fast ? launch_pdl(cs.pdl(), moe_route_fast_kernel, dim3(static_cast<unsigned>(n)), dim3(fast_block), 0, cs.get(),
                        a)
           : launch_pdl(cs.pdl(), moe_route_kernel, dim3(grid_for(n, kWarps)), dim3(kWarps * 32), smem, cs.get(), a),
      "moe_route");
}

}  // namespace ft::cuda
