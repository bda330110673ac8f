// Decode attention (one query row per sequence) on tensor cores, FlashDecoding style. One block of 4 warps per
// (row, KV head, split): the query heads of the KV group are the rows of one 16-row MMA tile (the K and V rows are
// read once for the whole group) and the row's keys are divided into n_split ranges. The block takes its range in
// chunks of 64 keys, a 16-key tile per warp (each warp copies its K and V tile by cp.async through the page table into
// its own double buffer, whose V every warp reads):
// each warp scores its tile (S = Q K^T), the warps exchange their rows' maxima, each turns its tile into
// probabilities against the common max and hands them round, and each warp multiplies all four tiles' probabilities
// by its quarter of V's columns (an online softmax over the chunks). The warps so end with the same max and sum and
// a quarter of the output each: nothing left to merge inside the block. With one range the block writes the output;
// with several, partials that attention.cu's combine kernel merges; or, launched as thread-block clusters of a row
// and KV head's ranges (sm_90), the ranges merge through distributed shared memory instead: every block leaves its
// range's state in its shared memory, and after a cluster barrier each block merges a slice of the group's outputs
// from every range's state (no global partials, no second kernel).
//
// A latent cache (multi-head latent attention) runs the same kernel with DK > DV: one cached kv head of DK dims whose
// first DV are the values, read by every query head. A block then takes 16 query heads (the kernel's "kv head" is the
// head group), its warps' stages hold one tile of rows that serves as K and, through its first DV columns, as V, and
// the Q tile's fragments are read from shared memory at each k step (DK / 16 of them would not fit in registers).
#include <cooperative_groups.h>

#include <type_traits>

#include "backend/cuda/attention_decode.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/mma.cuh"
#include "backend/cuda/pdl.cuh"

namespace ft::cuda {
namespace {

constexpr int kWarps = 4, kThreads = kWarps * 32, kKeys = 16;
constexpr float kLog2e = 1.4426950408889634f;

// DK: the keys' (and queries') head dim; DV: the values'. DK > DV: a latent cache, its values its keys' first DV dims.
template <int DK, int DV>
struct Smem {
  static_assert(DK >= DV && DK % 16 == 0 && DV % (16 * kWarps) == 0);
  static constexpr bool kLatent = DK != DV;
  static constexpr int kLd = DK + 8;                   // row pitch: the 8 rows of an ldmatrix in distinct banks
  static constexpr int kTile = kKeys * kLd;            // one K or V tile
  static constexpr int kStageTiles = kLatent ? 1 : 2;  // K and V, or the one tile that is both
  static constexpr int kWarpBytes = 2 * kStageTiles * kTile * int{sizeof(bf16)};  // [2 stages][K, V] per warp
  // The Q tile [16, kLd] after the warps' buffers; a cluster merge reuses those as the range's O [16][DV + 3] f32.
  static constexpr size_t kBytes = size_t{kWarps} * kWarpBytes + 16 * kLd * sizeof(bf16);
  static_assert(16 * (DV + 3) * sizeof(float) <= size_t{kWarps} * kWarpBytes);
};

// Merges the output slice of this block of a row and KV head's cluster (the group's group x D outputs divided over the
// n_split blocks) from the n_used ranges' states: range s's block holds its O rows (ws, row pitch D + 3) and their
// sum and max (log2 units) (state [16][2]) in its shared memory.
template <int D, class TO>
__device__ void merge_ranges_in_cluster(const TileAttnArgs& a, int row, int kvh, int n_split, int n_used, float* ws,
                                        float* state) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // every range's state is in its block's shared memory
  const int total = static_cast<int>(a.group) * D, slice = (total + n_split - 1) / n_split;
  const int begin = static_cast<int>(cluster.block_rank()) * slice, end = min(total, begin + slice);
  for (int i = begin + static_cast<int>(threadIdx.x); i < end; i += kThreads) {
    const int r = i / D, c = i % D;
    float m[kMaxClusterSplits], l[kMaxClusterSplits], o[kMaxClusterSplits];
    float mx = -INFINITY;
#pragma unroll
    for (int s = 0; s < kMaxClusterSplits; ++s)
      if (s < n_used) {
        const float* rs = cluster.map_shared_rank(state, s) + r * 2;
        l[s] = rs[0], m[s] = rs[1];
        o[s] = cluster.map_shared_rank(ws, s)[r * (D + 3) + c];
        mx = fmaxf(mx, m[s]);
      }
    float num = 0.0f, den = 0.0f;
    if (mx != -INFINITY)
#pragma unroll
      for (int s = 0; s < kMaxClusterSplits; ++s)
        if (s < n_used) {
          const float f = exp2_ftz(m[s] - mx);
          num += f * o[s];
          den += f * l[s];
        }
    TO* out = static_cast<TO*>(a.out) + int64_t{row} * a.o_tok + (int64_t{kvh} * a.group + r) * a.o_head;
    out[c] = from_f32<TO>(den > 0.0f ? num / den : 0.0f);
  }
  cluster.sync();  // no block leaves while another reads its shared memory
#endif
}

template <int DK, int DV, class TO, bool kClusterMerge>
__global__ void __launch_bounds__(kThreads) decode_kernel(TileAttnArgs a, int n_split, float* partial, int32_t* used) {
  using S = Smem<DK, DV>;
  constexpr bool kLatent = S::kLatent;
  constexpr int kLd = S::kLd, kChunks = DK / 8, kCols = DV / kWarps, kChunkKeys = kKeys * kWarps;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __shared__ float row_max[kWarps][16], row_sum[kWarps][16];  // each warp's per-row max and sum over its tile
  __shared__ uint4 p_frag[kWarps][32];                        // each warp's P tile as the MMA's A fragments, by lane
  __shared__ float state[16][2];                              // the range's sum and max per row, for a cluster merge
  // Everything up to the wait reads only the step's metadata (host copies before the step's first kernel): the
  // row's keys, its ranges and the first tile's cache rows are found while the kernel before runs.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int n_kv = static_cast<int>(a.n_kv), group = static_cast<int>(a.group), split = static_cast<int>(blockIdx.y);
  const int row = static_cast<int>(blockIdx.x) / n_kv, kvh = static_cast<int>(blockIdx.x) % n_kv;
  int lo_s = 0, hi_s = static_cast<int>(a.n_seq);  // the sequence s with q_start[s] <= row < q_start[s + 1]
  while (hi_s - lo_s > 1) {
    const int mid = (lo_s + hi_s) / 2;
    if (a.q_start[mid] <= row) lo_s = mid;
    else hi_s = mid;
  }
  const int seq = lo_s, page_size = static_cast<int>(a.page_size);
  const int pos = a.kv_len[seq] - (a.q_start[seq + 1] - a.q_start[seq]) + (row - a.q_start[seq]);
  const int lo = a.window > 0 ? max(0, pos - static_cast<int>(std::min<int64_t>(a.window, INT32_MAX)) + 1) : 0;
  const int n_keys = pos - lo + 1;
  const int per = max(kMinSplitKeys, ((n_keys + n_split - 1) / n_split + kKeys - 1) / kKeys * kKeys);  // per split
  const int n_used = max(1, (n_keys + per - 1) / per);  // splits this row fills (one for an empty row: zeros)
  const int k0 = lo + split * per, k1 = min(pos + 1, k0 + per);
  const int32_t* pages = a.page_table + int64_t{seq} * a.pt_stride;
  const bf16 *k_cache = static_cast<const bf16*>(a.k_cache), *v_cache = static_cast<const bf16*>(a.v_cache);
  bf16* const kv = reinterpret_cast<bf16*>(smem_raw) + warp * 2 * S::kStageTiles * S::kTile;  // [2][K, V] tiles
  bf16* const qs = reinterpret_cast<bf16*>(smem_raw + size_t{kWarps} * S::kWarpBytes);
  // Keys [k, k + 16) of K and V into the warp's stage (keys at or past k1 read as zeros): lane i finds key i % 16
  // through the page table (key_offset) and hands its offset around.
  auto key_offset = [&](int k) -> int64_t {
    const int key = k + lane % kKeys;
    if (key >= k1) return -1;
    const int64_t slot = int64_t{pages[key / page_size]} * page_size + key % page_size;
    return (kLatent ? slot : slot * a.n_kv + kvh) * DK;  // the latent cache has one kv head
  };
  auto load_kv = [&](int64_t off, int stage) {
    bf16* ks = kv + S::kStageTiles * stage * S::kTile;
#pragma unroll
    for (int i = 0; i < kKeys * kChunks / 32; ++i) {
      const int r = (lane + 32 * i) / kChunks, col = (lane + 32 * i) % kChunks * 8;
      const int64_t src = __shfl_sync(0xffffffffu, off, r);
      const int bytes = src < 0 ? 0 : 16;
      cp_async16(ks + r * kLd + col, k_cache + std::max<int64_t>(src, 0) + col, bytes);
      if constexpr (!kLatent)
        cp_async16(ks + S::kTile + r * kLd + col, v_cache + std::max<int64_t>(src, 0) + col, bytes);
    }
  };
  const int64_t first_off = key_offset(k0 + kKeys * warp);
  pdl_wait_then_release();
  // Ranges past the row's keys end here, except in a cluster that merges several ranges: there they stay for its
  // barriers (their states are empty and unread). A row of one range runs no barrier, and its empty ranges must not
  // reach the output below, where each would write its zeros over range 0's output.
  if (split >= n_used && (!kClusterMerge || n_used == 1)) return;
  if (!kClusterMerge && n_split > 1 && split == 0 && threadIdx.x == 0) used[row] = n_used;

  // The group's query heads as rows (rows past the group zero).
  const bf16* q = static_cast<const bf16*>(a.q) + int64_t{row} * a.q_tok + int64_t{kvh} * group * a.q_head;
  for (int c = threadIdx.x; c < 16 * kChunks; c += kThreads) {
    const int r = c / kChunks, col = c % kChunks * 8;
    cp_async16(qs + r * kLd + col, q + min(r, group - 1) * a.q_head + col, r < group ? 16 : 0);
  }
  cp_async_commit();
  load_kv(first_off, 0);  // keys past k1 (a warp past the range's end) load as zeros
  cp_async_commit();
  cp_async_wait<1>();  // Q is in (the first tile may still be in flight)
  __syncthreads();
  // Q's A fragments: in registers for the whole range, or (latent) read at each k step.
  uint32_t qf[kLatent ? 1 : DK / 16][4];
  auto q_frag = [&](int kk, uint32_t(&f)[4]) { ldmatrix_x4(f, qs + (lane % 16) * kLd + 16 * kk + 8 * (lane / 16)); };
  if constexpr (!kLatent)
#pragma unroll
    for (int kk = 0; kk < DK / 16; ++kk) q_frag(kk, qf[kk]);

  float o[kCols / 8][4] = {};                      // O [16 rows, this warp's kCols columns]
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {};  // rows g, g + 8: the block's running max and sum
  const float scale_log2 = a.scale * kLog2e;
  for (int c = k0, stage = 0; c < k1; c += kChunkKeys, stage ^= 1) {
    cp_async_wait<0>();  // this warp's tile of the chunk is in
    __syncwarp();
    const int k = c + kKeys * warp;  // the warp's tile: keys [k, k + 16)
    const bf16* ks = kv + S::kStageTiles * stage * S::kTile;
    float s[2][4] = {};  // S [16 heads, 16 keys]: n8 key tiles 0 and 1
#pragma unroll
    for (int kk = 0; kk < DK / 16; ++kk) {
      const auto step = [&](const uint32_t(&qa)[4]) {
        uint32_t b[4];
        ldmatrix_x4(b, ks + (lane % 8 + 8 * (lane / 16)) * kLd + 16 * kk + 8 * (lane / 8 % 2));
        mma_bf16_16816(s[0], qa, b[0], b[1]);
        mma_bf16_16816(s[1], qa, b[2], b[3]);
      };
      if constexpr (kLatent) {
        uint32_t qa[4];
        q_frag(kk, qa);
        step(qa);
      } else {
        step(qf[kk]);
      }
    }
#pragma unroll
    for (int jn = 0; jn < 2; ++jn)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[jn][e] = k + 8 * jn + 2 * t + e % 2 < k1 ? s[jn][e] * scale_log2 : -INFINITY;
#pragma unroll
    for (int i = 0; i < 2; ++i) {  // row g (c0, c1), row g + 8 (c2, c3)
      float mx = fmaxf(fmaxf(s[0][2 * i], s[0][2 * i + 1]), fmaxf(s[1][2 * i], s[1][2 * i + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      if (t == 0) row_max[warp][g + 8 * i] = mx;
    }
    __syncthreads();  // A: the maxima, and every warp's tile of this chunk (each waited for its own copies)
    // The next chunk into the other stage: every warp has finished the chunk before, which read it.
    if (c + kChunkKeys < k1) load_kv(key_offset(c + kChunkKeys + kKeys * warp), stage ^ 1);
    cp_async_commit();
    float alpha[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float mx = m[i];
#pragma unroll
      for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, row_max[w][g + 8 * i]);
      const float base = mx == -INFINITY ? 0.0f : mx;
      alpha[i] = exp2_ftz(m[i] - base);
      m[i] = mx;
      float sum = 0.0f;
#pragma unroll
      for (int jn = 0; jn < 2; ++jn)
#pragma unroll
        for (int e = 2 * i; e < 2 * i + 2; ++e) {
          s[jn][e] = exp2_ftz(s[jn][e] - base);
          sum += s[jn][e];
        }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      if (t == 0) row_sum[warp][g + 8 * i] = sum;
    }
    p_frag[warp][lane] = make_uint4(pack_bf16x2(s[0][0], s[0][1]), pack_bf16x2(s[0][2], s[0][3]),
                                    pack_bf16x2(s[1][0], s[1][1]), pack_bf16x2(s[1][2], s[1][3]));
    __syncthreads();  // B: every warp's P and sums
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      l[i] *= alpha[i];
#pragma unroll
      for (int w = 0; w < kWarps; ++w) l[i] += row_sum[w][g + 8 * i];
    }
#pragma unroll
    for (int dn = 0; dn < kCols / 8; ++dn) {
      o[dn][0] *= alpha[0], o[dn][1] *= alpha[0];
      o[dn][2] *= alpha[1], o[dn][3] *= alpha[1];
    }
    // O (this warp's columns) += P V over the chunk's four tiles, P's A fragments as their warps left them.
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const uint4 pf = p_frag[w][lane];
      const uint32_t p[4] = {pf.x, pf.y, pf.z, pf.w};
      const bf16* vs = reinterpret_cast<const bf16*>(smem_raw) +  // warp w's V (latent: its K tile's first DV dims)
                       ((w * 2 + stage) * S::kStageTiles + (kLatent ? 0 : 1)) * S::kTile;
#pragma unroll
      for (int dp = 0; dp < kCols / 16; ++dp) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, vs + (lane % 16) * kLd + warp * kCols + 16 * dp + 8 * (lane / 16));
        mma_bf16_16816(o[2 * dp], p, b[0], b[1]);
        mma_bf16_16816(o[2 * dp + 1], p, b[2], b[3]);
      }
    }
  }
  cp_async_wait<0>();

  // Rows g and g + 8: the sink joins the softmax once (split 0); num = f O, den = f l (+ the sink's term).
  float f[2], den[2], mxf[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int r = g + 8 * i;
    float sink = -INFINITY;
    if (a.sinks && split == 0 && r < group) {
      const int h = kvh * group + r;
      sink = (a.sinks_bf16 ? __bfloat162float(static_cast<const bf16*>(a.sinks)[h])
                           : static_cast<const float*>(a.sinks)[h]) *
             kLog2e;
    }
    const float mx = fmaxf(m[i], sink);
    f[i] = mx != -INFINITY ? exp2_ftz(m[i] - mx) : 0.0f;
    den[i] = f[i] * l[i] + (mx != -INFINITY && sink != -INFINITY ? exp2_ftz(sink - mx) : 0.0f);
    mxf[i] = mx;
  }
  // Row g + 8 i of O's columns this warp holds, times `scale`, into dst [DV] (TO or f32).
  auto store_cols = [&](int i, auto* dst, float scale) {
    using T = std::remove_pointer_t<decltype(dst)>;
#pragma unroll
    for (int dn = 0; dn < kCols / 8; ++dn) {
      const int col = warp * kCols + 8 * dn + 2 * t;
      dst[col] = from_f32<T>(o[dn][2 * i] * scale);
      dst[col + 1] = from_f32<T>(o[dn][2 * i + 1] * scale);
    }
  };
  if (n_used == 1) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int r = g + 8 * i;
      if (r >= group) continue;
      TO* out = static_cast<TO*>(a.out) + int64_t{row} * a.o_tok + int64_t{kvh * group + r} * a.o_head;
      store_cols(i, out, den[i] > 0.0f ? f[i] / den[i] : 0.0f);
    }
  } else if (kClusterMerge) {
    __syncthreads();  // every warp is done with the tile buffers: they hold the range's state now
    float* ws = reinterpret_cast<float*>(smem_raw);
    constexpr int kRowF = DV + 3;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int r = g + 8 * i;
      store_cols(i, ws + r * kRowF, f[i]);
      if (warp == 0 && t == 0) state[r][0] = den[i], state[r][1] = mxf[i];
    }
    merge_ranges_in_cluster<DV, TO>(a, row, kvh, n_split, n_used, ws, &state[0][0]);
  } else {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int r = g + 8 * i;
      if (r >= group) continue;
      float* part = partial + ((int64_t{row} * a.n_head + kvh * group + r) * n_split + split) * (DV + 2);
      store_cols(i, part, f[i]);
      if (warp == 0 && t == 0) part[DV] = mxf[i] == -INFINITY ? -INFINITY : mxf[i] / kLog2e, part[DV + 1] = den[i];
    }
  }
}

// The dynamic shared memory of a launch's blocks: Smem's bytes, or `spread` bytes for a launch of at most
// `spread_blocks` blocks. For head dim 128 in clusters, where three blocks would fit an SM by their shared memory (the
// H200's 228 KB holds three of 75.9 KB), a launch whose blocks fit the device at two an SM asks for enough that only
// two do, and a few rows' ranges spread over more SMs. On the H200 (Qwen3-30B-A3B's heads) the cluster form measured
// 1180-1205 tok/s at batch 1 with two blocks an SM and 1160.6 with three (one run), and batch 4 no slower at two
// (docs/perf.md). Larger launches (many rows, or ranges without clusters) keep three an SM, as measured; head dim 64
// is unmeasured and keeps what fits.
struct LaunchSmem {
  cudaError_t err = cudaSuccess;
  size_t bytes = 0, spread = 0;
  int64_t spread_blocks = 0;
};

template <int DK, int DV, bool kClusterMerge>
LaunchSmem launch_smem(const void* kernel) {
  LaunchSmem s;
  s.bytes = s.spread = Smem<DK, DV>::kBytes;
  if constexpr (DK == 128 && DV == 128 && kClusterMerge) {
    int device = 0, per_sm = 0, reserved = 0, n_sm = 0;
    cudaFuncAttributes fa{};
    s.err = cudaGetDevice(&device);
    if (s.err == cudaSuccess)
      s.err = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device);
    if (s.err == cudaSuccess)
      s.err = cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device);
    if (s.err == cudaSuccess) s.err = cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, device);
    if (s.err == cudaSuccess) s.err = cudaFuncGetAttributes(&fa, kernel);
    if (s.err != cudaSuccess) return s;
    const size_t fixed = fa.sharedSizeBytes + static_cast<size_t>(reserved);  // static and the system's per block
    const size_t third = static_cast<size_t>(per_sm) / 3;                     // three blocks of at most this fit
    if (s.bytes + fixed <= third) s.spread = (third + 1 - fixed + 127) / 128 * 128;
    s.spread_blocks = 2 * int64_t{n_sm};
  }
  return s;
}

template <int DK, int DV, class TO, bool kClusterMerge>
cudaError_t launch(const TileAttnArgs& a, int64_t n, int n_split, float* partial, int32_t* used, bool pdl,
                   cudaStream_t stream) {
  const auto kernel = decode_kernel<DK, DV, TO, kClusterMerge>;
  static const LaunchSmem setup = [&] {
    LaunchSmem s = launch_smem<DK, DV, kClusterMerge>(reinterpret_cast<const void*>(kernel));
    if (s.err == cudaSuccess)
      s.err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(s.spread));
    if (s.err == cudaSuccess && kClusterMerge)  // clusters of up to 16 blocks where the device has them
      s.err = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    return s;
  }();
  if (setup.err != cudaSuccess) return setup.err;
  const int64_t blocks = n * a.n_kv * n_split;
  const size_t smem = blocks <= setup.spread_blocks ? setup.spread : setup.bytes;
  const dim3 grid(static_cast<unsigned>(n * a.n_kv), static_cast<unsigned>(n_split));
  const dim3 cluster(1, kClusterMerge ? static_cast<unsigned>(n_split) : 1u);
  return launch_pdl_in_clusters(pdl, cluster, kernel, grid, dim3(kThreads), smem, stream, a, n_split, partial, used);
}

template <int DK, int DV>
cudaError_t launch(const TileAttnArgs& a, int64_t n, int n_split, float* partial, int32_t* used, bool cluster_merge,
                   bool out_f32, bool pdl, cudaStream_t stream) {
  if (cluster_merge)
    return out_f32 ? launch<DK, DV, float, true>(a, n, n_split, partial, used, pdl, stream)
                   : launch<DK, DV, bf16, true>(a, n, n_split, partial, used, pdl, stream);
  return out_f32 ? launch<DK, DV, float, false>(a, n, n_split, partial, used, pdl, stream)
                 : launch<DK, DV, bf16, false>(a, n, n_split, partial, used, pdl, stream);
}

}  // namespace

bool decode_attention_supported(int64_t head_dim, int64_t group) {
  return (head_dim == 64 || head_dim == 128) && group >= 1 && group <= 16;
}

bool latent_tile_decode_supported(int64_t hd_k, int64_t hd_v, int64_t n_head, int64_t max_block_smem) {
  constexpr int64_t kStaticBytes = 4096;  // the kernel's own arrays (2.7 KB) with room to spare
  return hd_k == kLatentTileKeyDim && hd_v == kLatentTileValueDim && n_head % kLatentTileHeads == 0 &&
         static_cast<int64_t>(Smem<kLatentTileKeyDim, kLatentTileValueDim>::kBytes) + kStaticBytes <= max_block_smem;
}

cudaError_t launch_decode_attention(const TileAttnArgs& a, int64_t n, int n_split, float* partial, int32_t* used,
                                    bool cluster_merge, bool out_f32, bool pdl, cudaStream_t stream) {
  if (a.d == 64) return launch<64, 64>(a, n, n_split, partial, used, cluster_merge, out_f32, pdl, stream);
  return launch<128, 128>(a, n, n_split, partial, used, cluster_merge, out_f32, pdl, stream);
}

cudaError_t launch_latent_tile_decode_attention(const TileAttnArgs& a, int64_t n, int n_split, float* partial,
                                                int32_t* used, bool cluster_merge, bool out_f32, bool pdl,
                                                cudaStream_t stream) {
  return launch<kLatentTileKeyDim, kLatentTileValueDim>(a, n, n_split, partial, used, cluster_merge, out_f32, pdl,
                                                        stream);
}

}  // namespace ft::cuda
