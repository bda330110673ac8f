// Prefill attention, FlashAttention-2 style on tensor cores (mma.sync m16n8k16, bf16 -> fp32). One block of 4 warps
// per (64 query rows of one sequence, query head); each warp owns 16 rows and keeps their state in registers: the
// S = Q K^T accumulators of the current key tile, the running max and sum of each row and the fp32 O accumulators,
// and for head dims 64 and 128 the Q fragments too (loaded once by ldmatrix; at 256 they are re-read from shared
// memory, for registers). Key tiles (64 keys, 32 at head dim 256) are gathered from the paged cache by cp.async into
// double-buffered shared memory (tile j + 1 in flight while tile j is computed). The online softmax runs on the S
// accumulators in the log2 domain (exp2, scale * log2(e) folded in), a row's max and sum shared by its 4 lanes
// through shuffles; the probabilities, rounded to bf16, are the A fragments of the P V product as they stand (the C
// layout of two n8 tiles is the A layout of one k16 step). Masks (causal, window) are evaluated only on tiles that
// cross a warp's diagonal or window edge, and a warp skips the tiles none of its rows sees; the block's key loop
// runs from the first tile its window reaches to the tile of its last query. Blocks find their sequence and tile
// from q_start in device memory; the grid is sized from host-known shapes: (rows / 64 + sequences) x heads blocks,
// heads fastest (a KV group's blocks run together and share its tiles in L2), the last (longest) tiles first.
#include "backend/cuda/attention_prefill.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/mma.cuh"

namespace ft::cuda {
namespace {

constexpr int kRows = 64, kWarps = 4, kThreads = kWarps * 32;
constexpr float kLog2e = 1.4426950408889634f;

template <int D>
struct Tiles {
  static constexpr int kKeys = D == 256 ? 32 : 64;  // keys per tile (fewer at d 256: registers)
  static constexpr int kLd = D + 8;                 // smem row pitch: 8 rows of an ldmatrix fall in distinct banks
  static constexpr int kTile = kKeys * kLd;         // elements of one K or V tile
  static constexpr bool kQRegs = D <= 128;          // Q fragments held in registers (d 256: read per tile)
  // smem: [2 stages][K, V][kKeys, kLd] bf16, then the Q tile [kRows, kLd], which borrows stage 1 instead when
  // its fragments move to registers before the key loop.
  static constexpr int kQ = kQRegs ? 2 * kTile : 4 * kTile;  // Q's offset
  static constexpr size_t kSmem = (kQRegs ? 4 * kTile : 4 * kTile + kRows * kLd) * sizeof(bf16);
  static_assert(kRows <= 2 * kKeys && (kKeys / kWarps) * (D / 8) % 32 == 0);
};

// Blocks per SM that the registers must allow (shared memory allows as many on Hopper): d <= 128 fits 3 in 168
// registers, d 256 2.
template <int D, class TO>
__global__ void __launch_bounds__(kThreads, D == 256 ? 2 : 3) prefill_kernel(TileAttnArgs a) {
  using T = Tiles<D>;
  constexpr int kKeys = T::kKeys, kLd = T::kLd, kChunks = D / 8;  // kChunks: 16-byte chunks per row
  extern __shared__ __align__(128) unsigned char smem_raw[];
  bf16* const smem = reinterpret_cast<bf16*>(smem_raw);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // Which sequence and tile: tiles are numbered sequence by sequence, blocks take them from the last.
  const int n_head = static_cast<int>(a.n_head), block = static_cast<int>(blockIdx.x), h = block % n_head;
  int tile = static_cast<int>(gridDim.x) / n_head - 1 - block / n_head, seq = -1, row0 = 0, len = 0;
  for (int s = 0; s < a.n_seq; ++s) {
    const int count = a.q_start[s + 1] - a.q_start[s], tiles = (count + kRows - 1) / kRows;
    if (tile < tiles) {
      seq = s;
      row0 = a.q_start[s] + tile * kRows;
      len = count;
      break;
    }
    tile -= tiles;
  }
  if (seq < 0) return;
  const int kvh = h / static_cast<int>(a.group), kv_len = a.kv_len[seq], page_size = static_cast<int>(a.page_size);
  const int win = static_cast<int>(std::min<int64_t>(std::max<int64_t>(a.window, 0), INT32_MAX));  // 0: none
  const int n_rows = std::min(len - tile * kRows, int{kRows});
  const int pos0 = kv_len - len + tile * kRows;  // position of the tile's first query
  const int32_t* pages = a.page_table + seq * a.pt_stride;
  const bf16 *k_cache = static_cast<const bf16*>(a.k_cache), *v_cache = static_cast<const bf16*>(a.v_cache);

  // Issues the copies of keys [k0, k0 + kKeys) of K and V into `stage` (keys past kv_len read as zeros). Warp w
  // copies rows [w R, w R + R): lane i finds row w R + i % R through the page table and hands its offset around.
  auto load_kv = [&](int k0, int stage) {
    constexpr int R = kKeys / kWarps;
    bf16* ks = smem + 2 * stage * T::kTile;  // [kKeys, kLd]
    bf16* vs = ks + T::kTile;
    const int key = k0 + warp * R + lane % R;
    int64_t off = -1;  // element offset of the key's row in the caches
    if (key < kv_len) off = ((int64_t{pages[key / page_size]} * page_size + key % page_size) * a.n_kv + kvh) * D;
#pragma unroll
    for (int i = 0; i < R * kChunks / 32; ++i) {
      const int r = (lane + 32 * i) / kChunks, col = lane % kChunks * 8;
      const int64_t src = __shfl_sync(0xffffffffu, off, r);
      const int dst = (warp * R + r) * kLd + col, bytes = src < 0 ? 0 : 16;
      cp_async16(ks + dst, k_cache + std::max<int64_t>(src, 0) + col, bytes);
      cp_async16(vs + dst, v_cache + std::max<int64_t>(src, 0) + col, bytes);
    }
  };

  // The Q tile (rows past n_rows zero) and the first key tile, into stage 0.
  const int last_pos = pos0 + n_rows - 1;
  const int j_begin = win > 0 ? std::max(0, pos0 - win + 1) / kKeys : 0, j_end = last_pos / kKeys;
  {
    const bf16* q = static_cast<const bf16*>(a.q) + row0 * a.q_tok + h * a.q_head;
    bf16* qs = smem + T::kQ;
#pragma unroll
    for (int i = 0; i < kRows * kChunks / kThreads; ++i) {
      const int r = (threadIdx.x + kThreads * i) / kChunks, col = threadIdx.x % kChunks * 8;
      cp_async16(qs + r * kLd + col, q + std::min(r, n_rows - 1) * a.q_tok + col, r < n_rows ? 16 : 0);
    }
    load_kv(j_begin * kKeys, 0);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
  }
  const bf16* q_lane = smem + T::kQ + (16 * warp + lane % 16) * kLd + 8 * (lane / 16);  // its ldmatrix row of Q
  uint32_t qf[T::kQRegs ? D / 16 : 1][4];  // A fragments of the warp's 16 rows, k16 step kk (or the current one)
  if constexpr (T::kQRegs) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(qf[kk], q_lane + 16 * kk);
    __syncthreads();  // stage 1 is free for the next tile
  }

  float o[D / 8][4] = {};                          // O [16 rows, D]: n8 tile dn, C layout
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {};  // rows g and g + 8: running max (log2 units), this lane's sum
  const float scale_log2 = a.scale * kLog2e;
  const int qw0 = pos0 + 16 * warp, qw1 = qw0 + 15;  // the warp's query positions
  for (int j = j_begin; j <= j_end; ++j) {
    const int k0 = j * kKeys, stage = (j - j_begin) & 1;
    if (j < j_end) load_kv(k0 + kKeys, stage ^ 1);
    cp_async_commit();
    cp_async_wait<1>();  // this thread's copies of tile j have landed; after the barrier, everyone's
    __syncthreads();
    const bf16* ks = smem + 2 * stage * T::kTile;  // [kKeys, kLd]
    const bf16* vs = ks + T::kTile;
    const bool active = 16 * warp < n_rows && k0 <= qw1 && (win == 0 || k0 + kKeys - 1 > qw0 - win);
    if (active) {
      // S [16, kKeys] = Q K^T: one ldmatrix gives the B fragments of two n8 key tiles.
      float s[kKeys / 8][4] = {};
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        if constexpr (!T::kQRegs) ldmatrix_x4(qf[0], q_lane + 16 * kk);
        const uint32_t(&qa)[4] = qf[T::kQRegs ? kk : 0];
#pragma unroll
        for (int jp = 0; jp < kKeys / 16; ++jp) {
          uint32_t b[4];
          ldmatrix_x4(b, ks + (16 * jp + lane % 8 + 8 * (lane / 16)) * kLd + 16 * kk + 8 * (lane / 8 % 2));
          mma_bf16_16816(s[2 * jp], qa, b[0], b[1]);
          mma_bf16_16816(s[2 * jp + 1], qa, b[2], b[3]);
        }
      }
      // Scale into log2 units; mask where the tile crosses the warp's diagonal or window edge.
      const bool mask = k0 + kKeys - 1 > qw0 || (win > 0 && k0 <= qw1 - win);
#pragma unroll
      for (int jn = 0; jn < kKeys / 8; ++jn) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = k0 + 8 * jn + 2 * t + e % 2, qp = qw0 + g + 8 * (e / 2);
          const bool out = mask && (key > qp || (win > 0 && key <= qp - win));
          s[jn][e] = out ? -INFINITY : s[jn][e] * scale_log2;
        }
      }
      // Online softmax per row (i = 0: row g, c0 c1; i = 1: row g + 8, c2 c3).
#pragma unroll
      for (int i = 0; i < 2; ++i) online_softmax_step(i, s, m[i], l[i], o);
      // O += P V: P's A fragment for keys [16 kk, +16) is the S accumulators of n8 tiles 2 kk and 2 kk + 1.
#pragma unroll
      for (int kk = 0; kk < kKeys / 16; ++kk) {
        const uint32_t p[4] = {pack_bf16x2(s[2 * kk][0], s[2 * kk][1]), pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),
                               pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                               pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, vs + (16 * kk + lane % 16) * kLd + 16 * dp + 8 * (lane / 16));
          mma_bf16_16816(o[2 * dp], p, b[0], b[1]);
          mma_bf16_16816(o[2 * dp + 1], p, b[2], b[3]);
        }
      }
    }
    __syncthreads();  // the stage is consumed before the next iteration refills it
  }

  // out = O / (l + e^(sink - m)), the row sums gathered from the row's 4 lanes.
  float sink = -INFINITY;
  if (a.sinks)
    sink =
        a.sinks_bf16 ? __bfloat162float(static_cast<const bf16*>(a.sinks)[h]) : static_cast<const float*>(a.sinks)[h];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int r = 16 * warp + g + 8 * i;
    float sum = l[i] + __shfl_xor_sync(0xffffffffu, l[i], 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (sink != -INFINITY && m[i] != -INFINITY) sum += exp2_ftz(sink * kLog2e - m[i]);
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    if (r >= n_rows) continue;
    TO* out = static_cast<TO*>(a.out) + (row0 + r) * a.o_tok + h * a.o_head + 2 * t;
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn) {
      out[8 * dn] = from_f32<TO>(o[dn][2 * i] * inv);
      out[8 * dn + 1] = from_f32<TO>(o[dn][2 * i + 1] * inv);
    }
  }
}

template <int D, class TO>
cudaError_t launch(const TileAttnArgs& a, int64_t n, cudaStream_t stream) {
  const size_t smem = Tiles<D>::kSmem;
  static const cudaError_t attr =
      cudaFuncSetAttribute(prefill_kernel<D, TO>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (attr != cudaSuccess) return attr;
  const int64_t tiles = (n + kRows - 1) / kRows + a.n_seq;  // enough for any split of n rows into n_seq sequences
  prefill_kernel<D, TO><<<static_cast<unsigned>(tiles * a.n_head), kThreads, smem, stream>>>(a);
  return cudaGetLastError();
}

template <int D>
cudaError_t launch(const TileAttnArgs& a, int64_t n, bool out_f32, cudaStream_t stream) {
  return out_f32 ? launch<D, float>(a, n, stream) : launch<D, bf16>(a, n, stream);
}

}  // namespace

bool prefill_attention_supported(int64_t head_dim) { return head_dim == 64 || head_dim == 128 || head_dim == 256; }

cudaError_t launch_prefill_attention(const TileAttnArgs& a, int64_t n, bool out_f32, cudaStream_t stream) {
  if (a.d == 64) return launch<64>(a, n, out_f32, stream);
  if (a.d == 128) return launch<128>(a, n, out_f32, stream);
  return launch<256>(a, n, out_f32, stream);
}

}  // namespace ft::cuda
