// Prefill attention, flash style on tensor cores (WMMA bf16 -> fp32). One block of 4 warps per (64 query rows
// of one sequence, query head): the Q tile stays in shared memory; per tile of 64 keys (read from the paged
// cache) the warps compute S = Q K^T, each warp then runs the online softmax of its 16 rows in fp32 (running max
// and sum per row, causal and window masks, probabilities rounded to bf16 for the P V product) and adds P V into
// an fp32 O tile after rescaling it. Blocks find their sequence and tile from q_start in device memory; the grid
// is sized from host-known shapes (rows / 64 + sequences).
#include <mma.h>

#include "backend/cuda/attention_prefill.cuh"
#include "backend/cuda/common.cuh"

namespace ft::cuda {
namespace {

using namespace nvcuda;

constexpr int kRows = 64, kKeys = 64, kWarps = 4, kThreads = kWarps * 32;

template <int D>
struct Smem {
  static constexpr int kLdQ = D + 8, kLdS = kKeys + 4, kLdP = kKeys + 8, kLdO = D + 4;
  bf16 q[kRows * kLdQ];
  bf16 k[kKeys * kLdQ];
  bf16 v[kKeys * kLdQ];
  float s[kRows * kLdS];
  bf16 p[kRows * kLdP];
  float o[kRows * kLdO];
  float m[kRows], l[kRows];
};

// Copies rows [0, count) of a [rows, D] bf16 tile from `row_ptr(i)` into smem with leading dim ld (zeros beyond).
template <int D, class RowPtr>
__device__ void load_tile(bf16* dst, int ld, int rows, int count, RowPtr row_ptr) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int c = threadIdx.x; c < rows * kChunks; c += kThreads) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (r < count) v = *reinterpret_cast<const uint4*>(row_ptr(r) + col);
    *reinterpret_cast<uint4*>(dst + r * ld + col) = v;
  }
}

template <int D, class TO>
__global__ void __launch_bounds__(kThreads) prefill_kernel(PrefillAttnArgs a) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Smem<D>& sm = *reinterpret_cast<Smem<D>*>(smem_raw);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Which sequence and tile: tiles are numbered sequence by sequence.
  int64_t seq = -1, tile = blockIdx.x, row0 = 0, len = 0;
  for (int64_t s = 0; s < a.n_seq; ++s) {
    const int64_t l = a.q_start[s + 1] - a.q_start[s], tiles = (l + kRows - 1) / kRows;
    if (tile < tiles) {
      seq = s;
      row0 = a.q_start[s] + tile * kRows;
      len = l;
      break;
    }
    tile -= tiles;
  }
  if (seq < 0) return;
  const int64_t h = blockIdx.y, kvh = h / a.group, kv_len = a.kv_len[seq];
  const int n_rows = static_cast<int>(std::min<int64_t>(kRows, len - tile * kRows));
  const int64_t pos0 = kv_len - len + tile * kRows;  // position of the tile's first query
  const bf16* q = static_cast<const bf16*>(a.q);
  const int32_t* pages = a.page_table + seq * a.pt_stride;
  auto cache_row = [&](const void* cache, int64_t key) {
    const int64_t slot = int64_t{pages[key / a.page_size]} * a.page_size + key % a.page_size;
    return static_cast<const bf16*>(cache) + (slot * a.n_kv + kvh) * D;
  };

  load_tile<D>(sm.q, Smem<D>::kLdQ, kRows, n_rows, [&](int r) { return q + (row0 + r) * a.q_tok + h * a.q_head; });
  for (int i = threadIdx.x; i < kRows * Smem<D>::kLdO; i += kThreads) sm.o[i] = 0.0f;
  for (int i = threadIdx.x; i < kRows; i += kThreads) sm.m[i] = -INFINITY, sm.l[i] = 0.0f;

  const int64_t last_pos = pos0 + n_rows - 1;
  int64_t k_begin = 0;
  if (a.window > 0) k_begin = std::max<int64_t>(0, pos0 - a.window + 1) / kKeys * kKeys;
  for (int64_t k0 = k_begin; k0 <= last_pos; k0 += kKeys) {
    const int count = static_cast<int>(std::min<int64_t>(kKeys, kv_len - k0));
    __syncthreads();  // the previous tile's K, V and P are consumed
    load_tile<D>(sm.k, Smem<D>::kLdQ, kKeys, count, [&](int r) { return cache_row(a.k_cache, k0 + r); });
    load_tile<D>(sm.v, Smem<D>::kLdQ, kKeys, count, [&](int r) { return cache_row(a.v_cache, k0 + r); });
    __syncthreads();
    // S rows [16 warp, +16) x 64 keys.
    for (int j = 0; j < kKeys / 16; ++j) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
      for (int kk = 0; kk < D; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> fb;
        wmma::load_matrix_sync(fa, sm.q + 16 * warp * Smem<D>::kLdQ + kk, Smem<D>::kLdQ);
        wmma::load_matrix_sync(fb, sm.k + 16 * j * Smem<D>::kLdQ + kk, Smem<D>::kLdQ);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(sm.s + 16 * warp * Smem<D>::kLdS + 16 * j, acc, Smem<D>::kLdS, wmma::mem_row_major);
    }
    __syncwarp();
    // Online softmax of the warp's rows: lanes take keys lane and lane + 32.
    for (int rr = 0; rr < 16; ++rr) {
      const int r = 16 * warp + rr;
      const int64_t qp = pos0 + r;
      float v0 = -INFINITY, v1 = -INFINITY;
      for (int half = 0; half < 2; ++half) {
        const int c = lane + 32 * half;
        const int64_t key = k0 + c;
        const bool ok = r < n_rows && c < count && key <= qp && (a.window <= 0 || key > qp - a.window);
        const float v = ok ? sm.s[r * Smem<D>::kLdS + c] * a.scale : -INFINITY;
        (half ? v1 : v0) = v;
      }
      const float m_old = sm.m[r], m_new = fmaxf(m_old, warp_max(fmaxf(v0, v1)));
      const float p0 = m_new == -INFINITY ? 0.0f : __expf(v0 - m_new), p1 = m_new == -INFINITY ? 0.0f : __expf(v1 - m_new);
      const float alpha = m_old == -INFINITY ? (m_new == -INFINITY ? 1.0f : 0.0f) : __expf(m_old - m_new);
      const float sum = warp_sum(p0 + p1);
      sm.p[r * Smem<D>::kLdP + lane] = __float2bfloat16_rn(p0);
      sm.p[r * Smem<D>::kLdP + lane + 32] = __float2bfloat16_rn(p1);
      for (int c = lane; c < D; c += 32) sm.o[r * Smem<D>::kLdO + c] *= alpha;
      __syncwarp();
      if (lane == 0) {
        sm.m[r] = m_new;
        sm.l[r] = sm.l[r] * alpha + sum;
      }
    }
    __syncwarp();
    // O rows of this warp += P V.
    for (int c = 0; c < D / 16; ++c) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      float* o_tile = sm.o + 16 * warp * Smem<D>::kLdO + 16 * c;
      wmma::load_matrix_sync(acc, o_tile, Smem<D>::kLdO, wmma::mem_row_major);
      for (int kk = 0; kk < kKeys; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, sm.p + 16 * warp * Smem<D>::kLdP + kk, Smem<D>::kLdP);
        wmma::load_matrix_sync(fb, sm.v + kk * Smem<D>::kLdQ + 16 * c, Smem<D>::kLdQ);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(o_tile, acc, Smem<D>::kLdO, wmma::mem_row_major);
    }
  }
  __syncthreads();
  float sink = -INFINITY;
  if (a.sinks)
    sink = a.sinks_bf16 ? __bfloat162float(static_cast<const bf16*>(a.sinks)[h]) : static_cast<const float*>(a.sinks)[h];
  for (int i = threadIdx.x; i < n_rows * D; i += kThreads) {
    const int r = i / D, c = i % D;
    const float m = sm.m[r];
    const float l = sm.l[r] + (sink == -INFINITY || m == -INFINITY ? 0.0f : __expf(sink - m));
    TO* o = static_cast<TO*>(a.out) + (row0 + r) * a.o_tok + h * a.o_head;
    o[c] = from_f32<TO>(l > 0.0f ? sm.o[r * Smem<D>::kLdO + c] / l : 0.0f);
  }
}

template <int D, class TO>
cudaError_t launch(const PrefillAttnArgs& a, int64_t n, cudaStream_t stream) {
  const size_t smem = sizeof(Smem<D>);
  static const cudaError_t attr =
      cudaFuncSetAttribute(prefill_kernel<D, TO>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (attr != cudaSuccess) return attr;
  const dim3 grid(static_cast<unsigned>((n + kRows - 1) / kRows + a.n_seq), static_cast<unsigned>(a.n_head));
  prefill_kernel<D, TO><<<grid, kThreads, smem, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace

bool prefill_attention_supported(int64_t head_dim) { return head_dim == 64 || head_dim == 128; }

cudaError_t launch_prefill_attention(const PrefillAttnArgs& a, int64_t n, bool out_f32, cudaStream_t stream) {
  if (a.d == 64) return out_f32 ? launch<64, float>(a, n, stream) : launch<64, bf16>(a, n, stream);
  return out_f32 ? launch<128, float>(a, n, stream) : launch<128, bf16>(a, n, stream);
}

}  // namespace ft::cuda
