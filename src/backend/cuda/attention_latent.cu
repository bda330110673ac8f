// Decode attention over a latent cache. The general kernel of attention.cu runs a block per (row, head, range): with
// one kv head of 576 dims read by every query head, each head's block reads every cached row again. Here a block
// takes a range of a row's keys for 16 query heads at once: it stages a tile of 32 cached rows in shared memory once
// and scores all 16 heads against it (a lane a key, a warp two heads), then adds p times the rows' value dims into
// every head's output (a thread two value dims of every head, four keys at a time). fp32 math, an online softmax per
// head; the ranges of a row merge in attention.cu's combine kernel.
#include "backend/cuda/attention_latent.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/vec_load.cuh"

namespace ft::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kHeads = static_cast<int>(kLatentHeadsPerBlock);  // query heads a block scores: two a warp
static_assert(kHeads == 2 * kWarps && kLatentMaxValueDim == 2 * kThreads);
constexpr int kKeys = 32;  // cached rows a tile: one a lane
// A thread's 16-byte loads of a tile.
constexpr int kTileLoads = static_cast<int>((kKeys * kLatentMaxKeyDim / 8 + kThreads - 1) / kThreads);
constexpr int64_t kPad = 8;  // row pitch hd_k + 8: a warp's 16-byte reads of 32 rows hit distinct banks

size_t smem_bytes(int64_t hd_k) {
  return static_cast<size_t>(kHeads * hd_k + kHeads * kKeys) * sizeof(float) +
         static_cast<size_t>(kKeys * (hd_k + kPad)) * sizeof(bf16);
}

// Grid (row, range, head group). The range's keys [k0, k1) of the row's window; warp w keeps heads w and w + 8 of
// the group (their running max and sum in every lane), thread t value dims 2t and 2t + 1 of every head.
template <class TQ, class TO>
__global__ void __launch_bounds__(kThreads)
    latent_decode_kernel(LatentAttnArgs a, int n_split, float* partial, int32_t* used) {
  extern __shared__ float smem[];
  float* q_s = smem;                                          // [kHeads][hd_k]
  float* p_s = q_s + kHeads * a.hd_k;                         // [kHeads][kKeys]
  auto* k_s = reinterpret_cast<bf16*>(p_s + kHeads * kKeys);  // [kKeys][hd_k + kPad]
  __shared__ float alpha_s[kHeads], m_s[kHeads], l_s[kHeads];
  const int64_t row = blockIdx.x, h0 = int64_t{blockIdx.z} * kHeads;
  const int split = static_cast<int>(blockIdx.y), tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5;
  const int64_t pitch = a.hd_k + kPad;
  const int64_t pos = a.kv_len[row] - 1;
  const int64_t lo = a.window > 0 ? max(int64_t{0}, pos - a.window + 1) : 0;
  const int64_t keys = pos - lo + 1;
  const int64_t per = max(int64_t{kLatentMinSplitKeys}, (keys + n_split - 1) / n_split);
  const int n_used = static_cast<int>(max(int64_t{1}, (keys + per - 1) / per));
  if (split == 0 && blockIdx.z == 0 && used) used[row] = n_used;
  if (split >= n_used) return;
  const int64_t k0 = lo + split * per, k1 = min(pos + 1, k0 + per);
  const int32_t* pages = a.page_table + row * a.pt_stride;
  const auto* cache = static_cast<const bf16*>(a.cache);

  for (int64_t i = tid; i < kHeads * a.hd_k; i += kThreads) {
    const int64_t h = h0 + i / a.hd_k;
    q_s[i] = h < a.n_head ? to_f32(static_cast<const TQ*>(a.q)[row * a.q_tok + h * a.q_head + i % a.hd_k]) : 0.0f;
  }
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};  // heads warp and warp + kWarps
  float acc[kHeads][2] = {};
  const int64_t d0 = 2 * int64_t{tid};
  const int64_t chunks = a.hd_k / 8;
  for (int64_t t0 = k0; t0 < k1; t0 += kKeys) {
    const int64_t cnt = min(int64_t{kKeys}, k1 - t0), cnt4 = (cnt + 3) / 4 * 4;
    // The tile's rows, every load in flight before the first store; rows cnt..cnt4 zero (p V reads keys by fours).
    uint4 chunk[kTileLoads];
#pragma unroll
    for (int u = 0; u < kTileLoads; ++u) {
      const int64_t i = tid + u * kThreads, j = i / chunks, key = t0 + j;
      chunk[u] = make_uint4(0, 0, 0, 0);
      if (i < cnt * chunks) {
        const int64_t slot = int64_t{pages[key / a.page_size]} * a.page_size + key % a.page_size;
        chunk[u] = *reinterpret_cast<const uint4*>(cache + slot * a.hd_k + i % chunks * 8);
      }
    }
#pragma unroll
    for (int u = 0; u < kTileLoads; ++u) {
      const int64_t i = tid + u * kThreads;
      if (i < cnt4 * chunks) *reinterpret_cast<uint4*>(k_s + i / chunks * pitch + i % chunks * 8) = chunk[u];
    }
    __syncthreads();
    // Scores: lane j's key against heads warp and warp + kWarps.
    float s[2] = {0.0f, 0.0f};
    if (lane < cnt) {
      const bf16* kr = k_s + lane * pitch;
      for (int64_t c = 0; c < a.hd_k; c += 8) {
        float kv[8];
        load8(kr + c, kv);
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const auto* qr = reinterpret_cast<const float4*>(q_s + (warp + e * kWarps) * a.hd_k + c);
          const float4 q0 = qr[0], q1 = qr[1];
          s[e] = fmaf(q0.x, kv[0], fmaf(q0.y, kv[1], fmaf(q0.z, kv[2], fmaf(q0.w, kv[3], s[e]))));
          s[e] = fmaf(q1.x, kv[4], fmaf(q1.y, kv[5], fmaf(q1.z, kv[6], fmaf(q1.w, kv[7], s[e]))));
        }
      }
    }
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float score = lane < cnt ? s[e] * a.scale : -INFINITY;
      const float m_new = fmaxf(m[e], warp_max(score));
      const float p = lane < cnt ? expf(score - m_new) : 0.0f;
      const float alpha = expf(m[e] - m_new);
      l[e] = l[e] * alpha + warp_sum(p);
      m[e] = m_new;
      const int h = warp + e * kWarps;
      p_s[h * kKeys + lane] = p;
      if (lane == 0) alpha_s[h] = alpha;
    }
    __syncthreads();
    // p V: thread t's two value dims of every head.
    if (d0 < a.hd_v) {
#pragma unroll
      for (int h = 0; h < kHeads; ++h) acc[h][0] *= alpha_s[h], acc[h][1] *= alpha_s[h];
      for (int j = 0; j < cnt; j += 4) {  // the rows past cnt are zero and their p too
        float2 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u)
          v[u] = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(k_s + (j + u) * pitch + d0));
#pragma unroll
        for (int h = 0; h < kHeads; ++h) {
          const float4 p = *reinterpret_cast<const float4*>(p_s + h * kKeys + j);
          acc[h][0] = fmaf(p.w, v[3].x, fmaf(p.z, v[2].x, fmaf(p.y, v[1].x, fmaf(p.x, v[0].x, acc[h][0]))));
          acc[h][1] = fmaf(p.w, v[3].y, fmaf(p.z, v[2].y, fmaf(p.y, v[1].y, fmaf(p.x, v[0].y, acc[h][1]))));
        }
      }
    }
    __syncthreads();  // the tile and p_s before the next tile overwrites them
  }
  if (lane == 0)
#pragma unroll
    for (int e = 0; e < 2; ++e) m_s[warp + e * kWarps] = m[e], l_s[warp + e * kWarps] = l[e];
  __syncthreads();
  if (d0 >= a.hd_v) return;
#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
    if (h0 + h >= a.n_head) break;
    if (n_used == 1) {
      TO* o = static_cast<TO*>(a.out) + row * a.o_tok + (h0 + h) * a.o_head + d0;
      const float inv = 1.0f / l_s[h];
      o[0] = from_f32<TO>(acc[h][0] * inv);
      o[1] = from_f32<TO>(acc[h][1] * inv);
      continue;
    }
    float* part = partial + ((row * a.n_head + h0 + h) * n_split + split) * (a.hd_v + 2);
    part[d0] = acc[h][0];
    part[d0 + 1] = acc[h][1];
    if (tid == 0) part[a.hd_v] = m_s[h], part[a.hd_v + 1] = l_s[h];
  }
}

template <class TQ, class TO>
cudaError_t launch(const LatentAttnArgs& a, int64_t n, int n_split, float* partial, int32_t* used,
                   cudaStream_t stream) {
  const auto kernel = latent_decode_kernel<TQ, TO>;
  static const cudaError_t attr = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                       static_cast<int>(smem_bytes(kLatentMaxKeyDim)));
  if (attr != cudaSuccess) return attr;
  const dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>(n_split),
                  static_cast<unsigned>((a.n_head + kHeads - 1) / kHeads));
  kernel<<<grid, kThreads, smem_bytes(a.hd_k), stream>>>(a, n_split, partial, used);
  return cudaGetLastError();
}

}  // namespace

bool latent_decode_supported(int64_t hd_k, int64_t hd_v) {
  return hd_k % 8 == 0 && hd_k <= kLatentMaxKeyDim && hd_v % 2 == 0 && hd_v <= hd_k && hd_v <= kLatentMaxValueDim;
}

cudaError_t launch_latent_decode_attention(const LatentAttnArgs& a, int64_t n, int n_split, float* partial,
                                           int32_t* used, bool q_f32, bool out_f32, cudaStream_t stream) {
  if (q_f32)
    return out_f32 ? launch<float, float>(a, n, n_split, partial, used, stream)
                   : launch<float, bf16>(a, n, n_split, partial, used, stream);
  return out_f32 ? launch<bf16, float>(a, n, n_split, partial, used, stream)
                 : launch<bf16, bf16>(a, n, n_split, partial, used, stream);
}

}  // namespace ft::cuda
