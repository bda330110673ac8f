// attention: causal GQA over the paged KV cache, prefill and decode alike, fp32 online softmax. One block per
// (query row, head, split): the keys of the row's window are divided into n_split ranges (decode: enough
// blocks to fill the GPU); each block scores 128 keys at a time (a thread per key), rescales its running
// max/sum and accumulates p * V (a thread per value dim). With several splits a second kernel merges the
// partials. Every sequence length comes from device memory, and the split count from host-known shapes
// only, so the launch is the same from step to step (CUDA-graph replay). bf16 steps run the tensor-core kernels
// instead where they take the shapes: attention_prefill.cu for steps with prompt chunks, attention_decode.cu for
// decode steps (its ranges merged inside a thread-block cluster on sm_90 when there are at most 16 of them, else its
// partials by the combine kernel here) and for every row over a latent cache of DeepSeek-V3's widths.
#include <bit>

#include "backend/cuda/attention_decode.cuh"
#include "backend/cuda/attention_latent.cuh"
#include "backend/cuda/attention_prefill.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/vec_load.cuh"

namespace ft::cuda {
namespace {

constexpr int kThreads = 128;     // keys per tile, and value dims per pass
constexpr int kMaxDimSlots = 4;   // hd_v <= kThreads * kMaxDimSlots
constexpr int kMaxSplit = 32;
constexpr int kMaxCombineSplits = 64;  // the most partials a combine merges (the decode kernel makes up to 64)
static_assert(kMaxSplit <= kMaxCombineSplits);

struct AttnArgs {
  const void* q;
  int64_t q_tok, q_head;
  const void* k_cache;
  const void* v_cache;
  void* out;
  int64_t o_tok, o_head;
  const int32_t* q_start;
  const int32_t* kv_len;
  const int32_t* page_table;
  int64_t pt_stride, n_seq, page_size, n_kv, n_head, group, hd_k, hd_v, window;
  int64_t k_slot, k_head, v_slot, v_head;  // the caches' strides (elements) between slots and between kv heads
  const void* sinks;  // [n_head] or null
  bool sinks_bf16;
  bool vec_k;  // hd_k and the key strides % 8 == 0 and the cache 16-byte aligned: keys read 8 at a time
  float scale;
  int n_split;
  float* partial;       // [n * n_head, n_split, hd_v + 2] when n_split > 1
  const int32_t* used;  // [n]: the splits each row used (a row of one has its output), or null: all n_split
};

// A cache whose slot (page * page_size + row) indexes its rows through one stride: its pages are page_size rows
// apart, a kv head's row within a slot contiguous (a view of a wider cache's leading dims qualifies).
bool slots_uniform(const Tensor& c) { return c.ndim == 4 && c.stride[0] == c.dim(1) * c.stride[1] && c.stride[3] == 1; }

template <class TC>
__device__ __forceinline__ float dot_row(const float* q, const TC* k, int64_t hd, bool vec) {
  float acc = 0.0f;
  if (vec) {
    constexpr int kUnroll = 4;  // chunk loads in flight before their arithmetic
    for (int64_t c0 = 0; c0 < hd; c0 += 8 * kUnroll) {
      Chunk8<TC> ch[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (c0 + 8 * u < hd) ch[u].load(k + c0 + 8 * u);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (c0 + 8 * u < hd)
#pragma unroll
          for (int i = 0; i < 8; ++i) acc = fmaf(q[c0 + 8 * u + i], ch[u].get(i), acc);
    }
  } else {
    for (int64_t c = 0; c < hd; ++c) acc = fmaf(q[c], to_f32(k[c]), acc);
  }
  return acc;
}

template <class TQ, class TC, class TO>
__global__ void __launch_bounds__(kThreads) attention_kernel(AttnArgs a) {
  extern __shared__ float q_s[];  // [hd_k]
  __shared__ float p_s[kThreads];
  __shared__ float red[32];
  const int64_t row = blockIdx.x / a.n_head, h = blockIdx.x % a.n_head, kvh = h / a.group;
  const int split = blockIdx.y, tid = threadIdx.x;
  int64_t lo_s = 0, hi_s = a.n_seq;  // the sequence s with q_start[s] <= row < q_start[s + 1]
  while (hi_s - lo_s > 1) {
    const int64_t mid = (lo_s + hi_s) / 2;
    if (a.q_start[mid] <= row) lo_s = mid;
    else hi_s = mid;
  }
  const int64_t s = lo_s, q0 = a.q_start[s], q1 = a.q_start[s + 1];
  const int64_t pos = a.kv_len[s] - (q1 - q0) + (row - q0);
  const int64_t lo = a.window > 0 ? max(int64_t{0}, pos - a.window + 1) : 0;
  const int64_t per = (pos - lo + 1 + a.n_split - 1) / a.n_split;
  const int64_t k0 = lo + split * per, k1 = min(pos + 1, k0 + per);
  const int32_t* pages = a.page_table + s * a.pt_stride;
  const TQ* q = static_cast<const TQ*>(a.q) + row * a.q_tok + h * a.q_head;
  for (int64_t c = tid; c < a.hd_k; c += kThreads) q_s[c] = to_f32(q[c]);
  const TC* kc = static_cast<const TC*>(a.k_cache);
  const TC* vc = static_cast<const TC*>(a.v_cache);
  const bool vec = a.vec_k;

  float m = -INFINITY, l = 0.0f;
  if (split == 0 && a.sinks) {
    m = a.sinks_bf16 ? to_f32(static_cast<const bf16*>(a.sinks)[h]) : static_cast<const float*>(a.sinks)[h];
    l = 1.0f;  // exp(sink - m) with m = sink
  }
  float acc[kMaxDimSlots] = {};
  __syncthreads();
  for (int64_t t0 = k0; t0 < k1; t0 += kThreads) {
    const int64_t j = t0 + tid;
    float score = -INFINITY;
    if (j < k1) {
      const int64_t slot = int64_t{pages[j / a.page_size]} * a.page_size + j % a.page_size;
      score = dot_row(q_s, kc + slot * a.k_slot + kvh * a.k_head, a.hd_k, vec) * a.scale;
    }
    const float m_new = fmaxf(m, block_max(score, red));
    const float p = j < k1 ? expf(score - m_new) : 0.0f;
    p_s[tid] = p;
    const float alpha = expf(m - m_new);
    l = l * alpha + block_sum(p, red);
    m = m_new;
    const int64_t cnt = min(int64_t{kThreads}, k1 - t0);
#pragma unroll
    for (int i = 0; i < kMaxDimSlots; ++i) acc[i] *= alpha;
    // p V, kKeys keys at a time with every value load issued before the arithmetic that uses it.
    constexpr int kKeys = 8;
    for (int64_t j0 = 0; j0 < cnt; j0 += kKeys) {
      float vv[kKeys][kMaxDimSlots];
#pragma unroll
      for (int u = 0; u < kKeys; ++u) {
        const int64_t key = t0 + min(j0 + u, cnt - 1);
        const int64_t slot = int64_t{pages[key / a.page_size]} * a.page_size + key % a.page_size;
        const TC* vrow = vc + slot * a.v_slot + kvh * a.v_head;
#pragma unroll
        for (int i = 0; i < kMaxDimSlots; ++i) {
          const int64_t d = tid + i * kThreads;
          vv[u][i] = d < a.hd_v ? to_f32(vrow[d]) : 0.0f;
        }
      }
#pragma unroll
      for (int u = 0; u < kKeys; ++u) {
        const float pj = j0 + u < cnt ? p_s[j0 + u] : 0.0f;
#pragma unroll
        for (int i = 0; i < kMaxDimSlots; ++i) acc[i] = fmaf(pj, vv[u][i], acc[i]);
      }
    }
    __syncthreads();
  }
  if (a.n_split == 1) {
    TO* o = static_cast<TO*>(a.out) + row * a.o_tok + h * a.o_head;
    const float inv = 1.0f / l;
#pragma unroll
    for (int i = 0; i < kMaxDimSlots; ++i) {
      const int64_t d = tid + i * kThreads;
      if (d < a.hd_v) o[d] = from_f32<TO>(acc[i] * inv);
    }
    return;
  }
  float* part = a.partial + (int64_t{blockIdx.x} * a.n_split + split) * (a.hd_v + 2);
#pragma unroll
  for (int i = 0; i < kMaxDimSlots; ++i) {
    const int64_t d = tid + i * kThreads;
    if (d < a.hd_v) part[d] = acc[i];
  }
  if (tid == 0) {
    part[a.hd_v] = m;
    part[a.hd_v + 1] = l;
  }
}

// Merges the partials of one (row, head): out = sum_s acc_s c_s / sum_s l_s c_s, c_s = e^(m_s - M). Warp 0's lane
// s holds split s's (m, l) (and s + 32's), and each thread's value loads go out eight at a time, so the merge is a
// few round trips to L2, not three per split.
template <class TO>
__global__ void __launch_bounds__(kThreads) combine_kernel(AttnArgs a) {
  __shared__ float coef[kMaxCombineSplits];  // c_s
  __shared__ float den_s;
  pdl_wait_then_release();
  const int64_t row = blockIdx.x / a.n_head, h = blockIdx.x % a.n_head, stride = a.hd_v + 2;
  const int n_used = a.used ? a.used[row] : a.n_split;
  if (a.used && n_used == 1) return;  // the attention kernel wrote this row's output
  const float* part = a.partial + int64_t{blockIdx.x} * a.n_split * stride;
  if (threadIdx.x < 32) {
    float m[2], l[2];  // splits lane and lane + 32
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int sp = threadIdx.x + 32 * i;
      m[i] = sp < n_used ? part[sp * stride + a.hd_v] : -INFINITY;
      l[i] = sp < n_used ? part[sp * stride + a.hd_v + 1] : 0.0f;
    }
    const float mx = warp_max(fmaxf(m[0], m[1]));
    float den = 0.0f;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int sp = threadIdx.x + 32 * i;
      if (sp < n_used) den += l[i] * (coef[sp] = expf(m[i] - mx));
    }
    den = warp_sum(den);
    if (threadIdx.x == 0) den_s = den;
  }
  __syncthreads();
  TO* o = static_cast<TO*>(a.out) + row * a.o_tok + h * a.o_head;
  for (int64_t d = threadIdx.x; d < a.hd_v; d += kThreads) {
    float num = 0.0f;
#pragma unroll 8
    for (int sp = 0; sp < n_used; ++sp) num = fmaf(part[sp * stride + d], coef[sp], num);
    o[d] = from_f32<TO>(num / den_s);
  }
}

// The combine kernel over a decode kernel's partials, each row's count of them in used.
Status combine(const Tensor& out, int64_t n, int64_t n_head, int64_t hd_v, int n_split, float* partial, int32_t* used,
               const CudaStream& cs) {
  AttnArgs c{};
  c.out = out.data(), c.o_tok = out.stride[0], c.o_head = out.stride[1], c.n_head = n_head, c.hd_v = hd_v;
  c.n_split = n_split, c.partial = partial, c.used = used;
  cudaError_t err = cudaSuccess;
  with_type(out.dtype, [&](auto to) {
    err = launch_pdl(cs.pdl(), combine_kernel<decltype(to)>, dim3(static_cast<unsigned>(n * n_head)), dim3(kThreads), 0,
                     cs.get(), c);
  });
  return cuda_status(err, "attention (decode combine)");
}

}  // namespace

Status attention(const Tensor& q,        // [n, n_head, hd_k] f32/bf16
                 const Tensor& k_cache,  // [n_pages, page_size, n_kv, hd_k] f32/bf16, pages of whole rows
                 const Tensor& v_cache,  // [n_pages, page_size, n_kv, hd_v] like k_cache (may view its first dims)
                 const PagedAttentionMeta& meta,
                 const Tensor& out,  // [n, n_head, hd_v] f32/bf16
                 const AttentionParams& p, Stream& s) {
  FT_RETURN_IF_ERROR(device_check("attention", {&q, &k_cache, &v_cache, &out, &meta.q_start, &meta.kv_len,
                                                &meta.page_table, &p.sinks}));
  if (!is_fb(q.dtype) || !is_fb(out.dtype)) return dtype_error("attention", "q/out", q);
  if (!is_fb(k_cache.dtype) || v_cache.dtype != k_cache.dtype) return dtype_error("attention", "cache", k_cache);
  if (meta.q_start.dtype != DType::kI32 || meta.kv_len.dtype != DType::kI32 || meta.page_table.dtype != DType::kI32)
    return dtype_error("attention", "meta", meta.q_start);
  if (p.sinks.defined() && (!is_fb(p.sinks.dtype) || p.sinks.numel() != q.dim(1)))
    return dtype_error("attention", "sinks", p.sinks);
  if (q.ndim != 3 || out.ndim != 3 || k_cache.ndim != 4 || v_cache.ndim != 4 || out.dim(0) != q.dim(0) ||
      out.dim(1) != q.dim(1) || k_cache.dim(3) != q.dim(2) || v_cache.dim(3) != out.dim(2) ||
      k_cache.dim(2) != v_cache.dim(2) || k_cache.dim(1) != meta.page_size || v_cache.dim(1) != meta.page_size ||
      k_cache.dim(2) == 0 || q.dim(1) % k_cache.dim(2) != 0 || !slots_uniform(k_cache) || !slots_uniform(v_cache) ||
      out.dim(2) > kThreads * kMaxDimSlots || meta.page_table.ndim != 2 || meta.n_seq < 1 ||
      meta.q_start.numel() < meta.n_seq + 1 || meta.kv_len.numel() < meta.n_seq)
    return shape_error("attention", "q, caches, meta and out do not match");
  const int64_t n = q.dim(0), n_head = q.dim(1), hd_v = out.dim(2);
  if (n == 0) return ok_status();
  if (n * n_head > INT32_MAX) return shape_error("attention", "too many rows");
  CudaStream& cs = cuda_stream(s);
  // bf16 steps go to the tensor-core kernels when they take the shapes: steps with prompt chunks (more rows than
  // sequences) to the prefill kernel, decode steps (a row per sequence) to the decode kernel.
  const int64_t group = n_head / k_cache.dim(2);
  // What every tensor-core kernel asks of q and the keys: bf16, rows of 16-byte chunks.
  const bool tile_operands = q.dtype == DType::kBF16 && k_cache.dtype == DType::kBF16 && k_cache.is_contiguous() &&
                             q.stride[0] % 8 == 0 && q.stride[1] % 8 == 0 && aligned16(q.data()) &&
                             aligned16(k_cache.data());
  const bool tiles = tile_operands && q.dim(2) == hd_v && v_cache.is_contiguous() && aligned16(v_cache.data());
  const TileAttnArgs pa{q.data(), q.stride[0], q.stride[1], k_cache.data(), v_cache.data(), out.data(),
                           out.stride[0], out.stride[1], meta.q_start.ptr<const int32_t>(),
                           meta.kv_len.ptr<const int32_t>(), meta.page_table.ptr<const int32_t>(),
                           meta.page_table.stride[0], meta.n_seq, meta.page_size, k_cache.dim(2), n_head, group, hd_v,
                           p.window, p.sinks.defined() ? p.sinks.data() : nullptr, p.sinks.dtype == DType::kBF16,
                           p.scale};
  if (tiles && n > meta.n_seq && prefill_attention_supported(hd_v))
    return cuda_status(launch_prefill_attention(pa, n, out.dtype == DType::kF32, cs.get()), "attention (prefill)");
  // The longest key range a row can have: splits are sized from it (host-known), not from the step's kv lengths, so
  // a step's launch is the same from step to step. The rows they are planned for are the step's rounded up to a
  // power of two (n_plan): a step padded to its CUDA graph's batch size (1, 2, 4, ... or the largest, which lies
  // between the step's rows and that power of two) gets the ranges the same step run eagerly gets, so replay is
  // bitwise equal to eager.
  const int64_t max_keys = p.window > 0 ? std::min<int64_t>(p.window, meta.page_table.dim(1) * meta.page_size)
                                        : meta.page_table.dim(1) * meta.page_size;
  const auto n_plan = static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(n)));
  const int64_t per_split = n_plan * n_head * (hd_v + 2) * static_cast<int64_t>(sizeof(float));
  const int64_t used_bytes = n_plan * static_cast<int64_t>(sizeof(int32_t));  // the decode kernel's counts, after
  const int64_t max_split =
      std::max<int64_t>(1, (static_cast<int64_t>(CudaStream::kAttentionScratchBytes) - used_bytes) / per_split);
  float* const partial = cs.attention_scratch();
  // A decode kernel's count of ranges a row used, after its n_split partials.
  const auto used_after = [&](int n_split) {
    return reinterpret_cast<int32_t*>(partial + n_split * per_split / static_cast<int64_t>(sizeof(float)));
  };
  // A latent cache, bf16 and without sinks: one kv head whose values are its keys' leading dims.
  const bool latent = k_cache.dim(2) == 1 && k_cache.dtype == DType::kBF16 && k_cache.is_contiguous() &&
                      v_cache.data() == k_cache.data() && v_cache.stride[1] == k_cache.stride[1] && !p.sinks.defined();
  // One of DeepSeek-V3's widths: the tensor-core decode kernel in blocks of 16 query heads, as the grouped heads of the
  // branch below, for prompt rows as well (each row a block a head group over its own causal keys: 16 heads share each
  // cached row a block reads).
  const bool latent_tiles =
      latent && tile_operands && latent_tile_decode_supported(q.dim(2), hd_v, n_head, cs.max_block_smem());
  if (latent_tiles || (tiles && n == meta.n_seq && decode_attention_supported(hd_v, group))) {
    TileAttnArgs da = pa;
    if (latent_tiles) da.n_kv = n_head / kLatentTileHeads, da.group = kLatentTileHeads;
    // As many ranges as the longest possible row fills (kMinSplitKeys each), up to three blocks per SM and 64
    // ranges; a shorter row uses fewer (the kernel sizes them from its keys). On the H200 with Qwen3-30B-A3B's
    // heads: fewer ranges cost batch 1 about 2% at 300 keys, more cost batch 3 10% at 8192 (docs/perf.md).
    // Where they merge in one cluster, a launch of few rows takes more, up to a block an SM (a power of two): the
    // cluster merge is divided over every block of the cluster, empty ranges too, and SMs the step leaves idle cost
    // nothing. H200, Qwen3-30B-A3B: 16 at batch 1 (2.8% faster than 2 to 4 at 100-165 keys), 8 at batch 4 (2.8% faster
    // than 16), 4 at batch 8 (1.4%) (docs/perf.md).
    const int64_t fill = (3 * int64_t{cs.n_sm()} + n_plan * da.n_kv - 1) / (n_plan * da.n_kv);
    const int64_t needed = (max_keys + kMinSplitKeys - 1) / kMinSplitKeys;
    const int64_t max_cluster =
        std::min<int64_t>(latent_tiles ? kLatentTileMaxCluster : kMaxClusterSplits, cs.max_cluster_blocks());
    const auto per_sm = static_cast<uint64_t>(std::max<int64_t>(1, cs.n_sm() / (n_plan * da.n_kv)));  // a row's blocks
    const int64_t spread = needed > max_cluster ? 1 : std::min<int64_t>(max_cluster, std::bit_floor(per_sm));
    int n_split = static_cast<int>(
        std::clamp<int64_t>(std::max(needed, spread), 1, std::min<int64_t>({kMaxCombineSplits, max_split, fill})));
    // Few enough ranges merge inside a thread-block cluster (a power of two of them; the extra ones stay empty).
    const int cluster = static_cast<int>(std::bit_ceil(static_cast<unsigned>(n_split)));
    const bool cluster_merge = n_split > 1 && cluster <= max_cluster;
    if (cluster_merge) n_split = cluster;
    int32_t* const used = used_after(n_split);
    const auto launch = latent_tiles ? launch_latent_tile_decode_attention : launch_decode_attention;
    FT_RETURN_IF_ERROR(
        cuda_status(launch(da, n, n_split, partial, used, cluster_merge, out.dtype == DType::kF32, cs.pdl(), cs.get()),
                    latent_tiles ? "attention (latent decode)" : "attention (decode)"));
    if (n_split == 1 || cluster_merge) return ok_status();
    return combine(out, n, n_head, hd_v, n_split, partial, used, cs);
  }
  if (n == meta.n_seq && latent && latent_decode_supported(q.dim(2), hd_v)) {
    // Other latent decode steps (f32 queries, other widths, devices without the shared memory for the tensor-core
    // kernel): the CUDA-core kernel, a block per 16 query heads and key range.
    const int64_t groups = (n_head + kLatentHeadsPerBlock - 1) / kLatentHeadsPerBlock;
    const int64_t fill = (3 * int64_t{cs.n_sm()} + n_plan * groups - 1) / (n_plan * groups);
    const int64_t needed = (max_keys + kLatentMinSplitKeys - 1) / kLatentMinSplitKeys;
    const int n_split =
        static_cast<int>(std::clamp<int64_t>(needed, 1, std::min<int64_t>({kMaxCombineSplits, max_split, fill})));
    int32_t* const used = used_after(n_split);
    const LatentAttnArgs la{q.data(),
                            q.stride[0],
                            q.stride[1],
                            k_cache.data(),
                            out.data(),
                            out.stride[0],
                            out.stride[1],
                            meta.kv_len.ptr<const int32_t>(),
                            meta.page_table.ptr<const int32_t>(),
                            meta.page_table.stride[0],
                            meta.page_size,
                            n_head,
                            q.dim(2),
                            hd_v,
                            p.window,
                            p.scale};
    FT_RETURN_IF_ERROR(cuda_status(launch_latent_decode_attention(la, n, n_split, partial, used, q.dtype == DType::kF32,
                                                                  out.dtype == DType::kF32, cs.get()),
                                   "attention (latent decode)"));
    if (n_split == 1) return ok_status();
    return combine(out, n, n_head, hd_v, n_split, partial, used, cs);
  }
  AttnArgs a{q.data(),
             q.stride[0],
             q.stride[1],
             k_cache.data(),
             v_cache.data(),
             out.data(),
             out.stride[0],
             out.stride[1],
             meta.q_start.ptr<const int32_t>(),
             meta.kv_len.ptr<const int32_t>(),
             meta.page_table.ptr<const int32_t>(),
             meta.page_table.stride[0],
             meta.n_seq,
             meta.page_size,
             k_cache.dim(2),
             n_head,
             n_head / k_cache.dim(2),
             q.dim(2),
             hd_v,
             p.window,
             k_cache.stride[1],
             k_cache.stride[2],
             v_cache.stride[1],
             v_cache.stride[2],
             p.sinks.defined() ? p.sinks.data() : nullptr,
             p.sinks.dtype == DType::kBF16,
             q.dim(2) % 8 == 0 && k_cache.stride[1] % 8 == 0 && k_cache.stride[2] % 8 == 0 && aligned16(k_cache.data()),
             p.scale,
             1,
             partial,
             nullptr};
  // Splits: enough blocks for two waves, no split shorter than 16 keys of the longest possible sequence,
  // and the partials within the stream's fixed scratch.
  const int64_t want = (2 * cs.n_sm() + n_plan * n_head - 1) / (n_plan * n_head);
  const int64_t n_split = std::min<int64_t>({want, std::max<int64_t>(1, max_keys / 16), kMaxSplit, max_split});
  a.n_split = static_cast<int>(n_split);
  const dim3 grid(static_cast<unsigned>(n * n_head), static_cast<unsigned>(n_split));
  const size_t smem = static_cast<size_t>(q.dim(2)) * sizeof(float);
  with_types({q.dtype, k_cache.dtype, out.dtype}, [&](auto tq, auto tc, auto to) {
    using TQ = decltype(tq);
    using TC = decltype(tc);
    using TO = decltype(to);
    attention_kernel<TQ, TC, TO><<<grid, kThreads, smem, cs.get()>>>(a);
    if (n_split > 1) combine_kernel<TO><<<static_cast<unsigned>(n * n_head), kThreads, 0, cs.get()>>>(a);
  });
  return launch_status("attention");
}

}  // namespace ft::cuda
