// bench_persistent_layer: what a persistent batch-1 decode step takes on this GPU, measured on the benchmark model's
// shape (Qwen3-30B-A3B: hidden 2048, 32 q / 4 kv heads of 128, 128 experts top-8 of 768) with random bf16 weights,
// 16 layers, against the 43 us a layer today's graph of kernels takes (docs/perf.md, "A persistent decode step").
//
// One block an SM (16 warps) stays resident for the whole step; its phases are separated by grid barriers. Each warp
// streams its share of every weight matrix through its own ring of FT_PL_RING 2 KB stages in shared memory (cp.async,
// an mbarrier a slot), issuing as far ahead as its ring allows and the addresses are known, so that a dense phase's
// weights (o_proj, the router, the next layer's qkv) arrive while the latency-bound phases before it run, and the
// expert rows stream once the ids are known. A layer's phases, with the barrier after each:
//   P1 qkv: residual update, RMSNorm, the block's qkv rows (the first `held` from a region loaded during the last
//      layer's router phase, the rest streamed);
//   P3 attention: each (kv head, 64-key range) item: its 8 q heads normed and rotated, the newest key's k and v
//      normed, rotated and stored in the cache by the last range, scores, softmax, P V, a partial (m, l, o);
//   P4a the partials merged per (head, 32 dims);  P4b o_proj rows;
//   P5 residual update, RMSNorm, router rows;  P6 every block routes (softmax, rank) and streams its gate/up rows;
//   P7 down rows (two warps an expert, a fixed order over the 8 experts).
// The final norm and the lm_head are not part of it (one GEMV at the copy rate, 139 us a step today). The weights and
// the KV cache are laid out as the model's (rows of [out, in]); the cache is contiguous rather than paged.
//
//   bench_persistent_layer [keys=400] [reps=20] [held=FT_PL_HELD]   (compile-time: FT_PL_RING=4, FT_PL_HELD=16)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

#define CHECK(call)                                                                            \
  do {                                                                                         \
    const cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "bench_persistent_layer: %s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

using bf16 = __nv_bfloat16;

constexpr int kLayers = 16;
constexpr int kD = 2048, kHeads = 32, kKvHeads = 4, kHd = 128, kGroup = kHeads / kKvHeads;
constexpr int kQRows = kHeads * kHd, kKRows = kKvHeads * kHd, kQkvRows = kQRows + 2 * kKRows;  // 4096, 512, 5120
constexpr int kExperts = 128, kTopK = 8, kInter = 768;
constexpr int kRangeKeys = 64;
constexpr float kEps = 1e-6f, kRopeBase = 1e6f;

constexpr int kWarps = 16, kThreads = kWarps * 32;
// Each warp streams its weights into its own ring of kRing 2 KB stages (128 KB a block).
#ifndef FT_PL_RING
#define FT_PL_RING 4
#endif
#ifndef FT_PL_HELD
#define FT_PL_HELD 16
#endif
constexpr int kStageBytes = 2048, kRing = FT_PL_RING;
static_assert(kTopK * 2 == kWarps, "down: two warps an expert");
constexpr int kHeldRows = FT_PL_HELD;   // qkv rows a block can hold through the MoE
constexpr int kKRowPad = kHd * 2 + 16;  // bytes per key row in shared memory (bank spread)
constexpr int kHeldBytes = std::max(kHeldRows * kD * 2, 2 * kRangeKeys * kKRowPad);  // held rows, or P3's K/V tiles
constexpr int kPhases = 7;                                                           // P1 P3 P4a P4b P5 P6 P7
constexpr int kPartFloats = 2 * kGroup + kGroup * kHd;                               // m[8], l[8], o[8][128]

struct LayerWeights {
  const bf16* qkv;        // [5120, 2048]
  const bf16* o;          // [2048, 4096]
  const bf16* router;     // [128, 2048]
  const bf16* gate_up;    // [128, 1536, 2048]: gate rows, then up rows
  const bf16* down;       // [128, 2048, 768]
  const bf16* attn_norm;  // [2048]
  const bf16* ffn_norm;   // [2048]
  const bf16* q_norm;     // [128]
  const bf16* k_norm;     // [128]
  bf16* k_cache;          // [keys, 4, 128]
  bf16* v_cache;          // [keys, 4, 128]
};

struct Step {
  const LayerWeights* layers;  // [kLayers]
  int n_keys;                  // keys after this step's (its position + 1)
  int held_max;                // qkv rows a block holds through the MoE, at most kHeldRows
  float* resid;                // [2, 2048]: the residual, ping-pong; [1] holds the embedding at the start
  float* moe_out;              // [2048] (zero at the start)
  float* qkv_out;              // [5120]
  float* parts;                // [items, kPartFloats]
  bf16* attn_out;              // [4096]
  float* o_out;                // [2048]
  float* logits;               // [128]
  float* h;                    // [8, 768]
  unsigned* barrier;           // zero before the launch
  unsigned long long* marks;   // [kLayers * kPhases + 1, grid] or null
};

// The block's share [begin, end) of n items over the grid, balanced.
__device__ __forceinline__ int share_begin(int n, int b) { return static_cast<int>(int64_t{n} * b / gridDim.x); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Sum over the block; red: kWarps floats. Every thread gets the sum.
__device__ __forceinline__ float block_sum(float v, float* red) {
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float s = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) s += red[w];
  __syncthreads();
  return s;
}

__device__ __forceinline__ void bf16x8(uint4 u, float (&v)[8]) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i)
    v[2 * i] = __uint_as_float(w[i] << 16), v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
}

// --- mbarriers and asynchronous copies ---
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// Where a stuck wait reports itself (host-mapped: the host reads it while the kernel runs): [0] set to 1, then the
// block, the thread, what it waited for (a warp's stage s as s + 1; 1 << 30 the held rows; 1 << 31 the grid barrier)
// and the parity or target. progress[b]: the last grid barrier block b passed.
__device__ unsigned long long* g_diag;
__device__ unsigned* g_progress;

__device__ __noinline__ void report_stuck(long long what, unsigned long long arg) {
  volatile unsigned long long* d = g_diag;
  d[1] = blockIdx.x, d[2] = threadIdx.x, d[3] = static_cast<unsigned long long>(what), d[4] = arg;
  __threadfence_system();
  d[0] = 1;
  __threadfence_system();
  __trap();
}

__device__ __forceinline__ bool mbar_try(uint64_t* bar, unsigned parity) {
  uint32_t ok;
  asm volatile(
      "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(ok)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
  return ok != 0;
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity, long long what) {
  const long long t0 = clock64();
  while (!mbar_try(bar, parity))
    if (clock64() - t0 > (1ll << 32)) report_stuck(what, parity);
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}

__device__ __forceinline__ void grid_barrier(unsigned* count, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(count) : "memory");
    unsigned v;
    const long long t0 = clock64();
    do {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(count) : "memory");
      if (clock64() - t0 > (1ll << 32)) report_stuck(1ll << 31, (static_cast<unsigned long long>(target) << 32) | v);
    } while (v < target);
    if (g_progress) static_cast<volatile unsigned*>(g_progress)[blockIdx.x] = target / gridDim.x;
  }
  __syncthreads();
}

// What a block streams in a layer, split over its warps: unit u of a kind goes to warp u % 16, and a warp streams its
// units' 2 KB stages in this order: qkv rows past the held ones (2 stages a row), o_proj rows (4), router rows (2),
// gate/up row pairs (gate's two halves, then up's), down segments (one 768-wide row of one expert, 1.5 KB; warp w
// takes expert w / 2, rows w % 2, + 2, ..., so that it reads that expert's h once).
struct Plan {
  int q0, q1, held;  // qkv rows; the first `held` come from the held region
  int o0, o1;        // o_proj rows, also the down rows
  int r0, r1;        // router rows
  int g0, g1;        // gate/up pairs: pair p = expert slot p / 768, row p % 768
  // This warp's unit counts and stage offsets within a layer.
  int nq, no, nr, ng, nd, so, sr, sg, sd, per_layer;
  __device__ void init(int b, int held_max, int warp) {
    q0 = share_begin(kQkvRows, b), q1 = share_begin(kQkvRows, b + 1);
    o0 = share_begin(kD, b), o1 = share_begin(kD, b + 1);
    r0 = share_begin(kExperts, b), r1 = share_begin(kExperts, b + 1);
    g0 = share_begin(kTopK * kInter, b), g1 = share_begin(kTopK * kInter, b + 1);
    held = min(held_max, q1 - q0);
    nq = units(q1 - q0 - held, warp), no = units(o1 - o0, warp), nr = units(r1 - r0, warp);
    ng = units(g1 - g0, warp), nd = (o1 - o0 - (warp & 1) + 1) / 2;
    so = 2 * nq, sr = so + 4 * no, sg = sr + 2 * nr, sd = sg + 4 * ng, per_layer = sd + nd;
  }
  __device__ static int units(int n, int warp) { return n > warp ? (n - warp + kWarps - 1) / kWarps : 0; }
};

// A warp's weight stream: stages issued by its 32 lanes (cp.async, four 16-byte chunks a lane) into its own ring of
// kRing 2 KB slots, each slot's mbarrier completing when every lane's copies have landed. The same warp issues and
// consumes a slot's uses in turn, so a parity wait never meets a barrier two phases on.
struct WarpStream {
  int issued = 0, consumed = 0;  // stage indices over the whole step
  __device__ void top_up(uint8_t* ring, uint64_t* bars, const Plan& pl, const Step& st, const int* ids, int limit) {
    const int lane = threadIdx.x & 31, end = min(limit, consumed + kRing);
    for (; issued < end; ++issued) {
      const int slot = issued % kRing;
      const bf16* src = stage_src(pl, st, ids, issued / pl.per_layer, issued % pl.per_layer);
      uint8_t* dst = ring + slot * kStageBytes;
#pragma unroll
      for (int c = 0; c < kStageBytes / 16 / 32; ++c) {
        const int chunk = lane + 32 * c;
        if (chunk < stage_chunks(pl, issued % pl.per_layer)) cp_async16(dst + chunk * 16, src + chunk * 8);
      }
      asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_addr(&bars[slot])) : "memory");
    }
  }
  // The next stage's data, once landed.
  __device__ const bf16* next(uint8_t* ring, uint64_t* bars) {
    const int slot = consumed % kRing;
    mbar_wait(&bars[slot], (consumed / kRing) & 1, consumed + 1);
    return reinterpret_cast<const bf16*>(ring + slot * kStageBytes);
  }
  __device__ void done() {
    __syncwarp();
    ++consumed;
  }
  __device__ static int stage_chunks(const Plan& pl, int off) { return off >= pl.sd ? kInter / 8 : kStageBytes / 16; }
  // Stage `off` of the warp's list in `layer`: where its bytes start.
  __device__ static const bf16* stage_src(const Plan& pl, const Step& st, const int* ids, int layer, int off) {
    const LayerWeights& w = st.layers[layer];
    const int warp = threadIdx.x >> 5;
    constexpr int half = kStageBytes / 2;  // elements a stage
    if (off < pl.so) {
      const int row = pl.q0 + pl.held + warp + kWarps * (off / 2);
      return w.qkv + int64_t{row} * kD + (off % 2) * half;
    }
    if (off < pl.sr) {
      off -= pl.so;
      return w.o + int64_t{pl.o0 + warp + kWarps * (off / 4)} * kQRows + (off % 4) * half;
    }
    if (off < pl.sg) {
      off -= pl.sr;
      return w.router + int64_t{pl.r0 + warp + kWarps * (off / 2)} * kD + (off % 2) * half;
    }
    if (off < pl.sd) {
      off -= pl.sg;
      const int pair = pl.g0 + warp + kWarps * (off / 4), part = off % 4;
      return w.gate_up + (int64_t{ids[pair / kInter]} * 2 * kInter + (part / 2) * kInter + pair % kInter) * kD +
             (part % 2) * half;
    }
    off -= pl.sd;
    return w.down + (int64_t{ids[warp >> 1]} * kD + pl.o0 + (warp & 1) + 2 * off) * kInter;
  }
};

struct Smem {
  uint8_t rings[kWarps][kRing * kStageBytes];
  uint8_t held[kHeldBytes];     // qkv rows; during P3 the K and V tiles
  bf16 x[2 * kD];               // the GEMV input: normed hidden (2048) or the attention output (4096)
  float q[kGroup][kHd];         // P3: the item's normed, rotated q heads
  float p[kGroup][kRangeKeys];  // P3: probabilities
  float red[kWarps];
  uint64_t keys[kExperts];  // P6: routing keys
  int ids[kTopK];
  float weights[kTopK];
  float down_part[64][kTopK];  // P7: per (row, expert) weighted dots
  uint64_t bars[kWarps][kRing], held_full;
};

// The dot of n bf16 weights with x (bf16, shared), n a multiple of 256, over a warp; not reduced.
__device__ __forceinline__ float part_dot(const bf16* w, const bf16* x, int n, int lane) {
  float acc = 0.0f;
#pragma unroll 4
  for (int c = lane * 8; c < n; c += 256) {
    float a[8], v[8];
    bf16x8(*reinterpret_cast<const uint4*>(w + c), a);
    bf16x8(*reinterpret_cast<const uint4*>(x + c), v);
#pragma unroll
    for (int i = 0; i < 8; ++i) acc = fmaf(a[i], v[i], acc);
  }
  return acc;
}

// x = bf16(rmsnorm(a + b) * w) into shared memory; block 0 stores a + b as the next residual.
__device__ __forceinline__ void residual_norm(Smem& sm, const float* a, const float* b, const bf16* w, float* next) {
  float v[4], ss = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = threadIdx.x + i * kThreads;
    v[i] = __ldcg(a + c) + __ldcg(b + c);
    ss += v[i] * v[i];
  }
  const float r = rsqrtf(block_sum(ss, sm.red) / kD + kEps);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = threadIdx.x + i * kThreads;
    sm.x[c] = __float2bfloat16_rn(v[i] * r * __bfloat162float(w[c]));
    if (blockIdx.x == 0) next[c] = v[i];
  }
  __syncthreads();
}

// One (kv head, key range) item of P3.
__device__ void attention_item(Smem& sm, const Step& st, const LayerWeights& w, int kvh, int range, float* part) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, pos = st.n_keys - 1;
  const int k0 = range * kRangeKeys, n = min(kRangeKeys, st.n_keys - k0);
  uint8_t* ktile = sm.held;
  uint8_t* vtile = sm.held + kRangeKeys * kKRowPad;
  // The range's keys and values (16 chunks a row, K then V) into registers, stored once the q heads are formed: loads
  // of their own, since a cp.async group would also wait for the weight stages the warps have in flight.
  constexpr int kChunks = 2 * kRangeKeys * 16 / kThreads;
  uint4 kv_chunk[kChunks];
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int c = threadIdx.x + i * kThreads, isv = c >= kRangeKeys * 16, j = (c / 16) % kRangeKeys, key = k0 + j;
    if (j < n && key != pos)
      kv_chunk[i] = __ldcg(reinterpret_cast<const uint4*>((isv ? w.v_cache : w.k_cache) +
                                                          (int64_t{key} * kKvHeads + kvh) * kHd + (c % 16) * 8));
  }
  // Warps 0-7: q heads; 8, 9: the newest key's k and v when this range holds it. Lane i: dims i, i + 32, +64, +96.
  const bool newest = pos >= k0 && pos < k0 + n;
  if (warp < kGroup || (newest && warp < kGroup + 2)) {
    const bool isq = warp < kGroup, isv = warp == kGroup + 1;
    const int row = isq ? (kvh * kGroup + warp) * kHd : (isv ? kQRows + kKRows : kQRows) + kvh * kHd;
    float v[4], ss = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = __ldcg(st.qkv_out + row + lane + 32 * i), ss += v[i] * v[i];
    if (!isv) {
      const float r = rsqrtf(warp_sum(ss) / kHd + kEps);
      const bf16* nw = isq ? w.q_norm : w.k_norm;
#pragma unroll
      for (int i = 0; i < 4; ++i) v[i] *= r * __bfloat162float(nw[lane + 32 * i]);
#pragma unroll
      for (int i = 0; i < 2; ++i) {  // rotate_half: (d, d + 64)
        const int d = lane + 32 * i;
        float sn, cs;
        sincosf(static_cast<float>(pos) * powf(kRopeBase, -2.0f * d / kHd), &sn, &cs);
        const float a = v[i], b = v[i + 2];
        v[i] = a * cs - b * sn, v[i + 2] = b * cs + a * sn;
      }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int d = lane + 32 * i;
      if (isq) {
        sm.q[warp][d] = v[i];
      } else {
        const bf16 b = __float2bfloat16_rn(v[i]);
        (isv ? w.v_cache : w.k_cache)[(int64_t{pos} * kKvHeads + kvh) * kHd + d] = b;
        reinterpret_cast<bf16*>((isv ? vtile : ktile) + (pos - k0) * kKRowPad)[d] = b;
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int c = threadIdx.x + i * kThreads, isv = c >= kRangeKeys * 16, j = (c / 16) % kRangeKeys;
    if (j < n && k0 + j != pos)
      *reinterpret_cast<uint4*>((isv ? vtile : ktile) + j * kKRowPad + (c % 16) * 16) = kv_chunk[i];
  }
  __syncthreads();
  // Scores: thread (head h, key j).
  const int h = threadIdx.x >> 6, j = threadIdx.x & 63;
  float s = -INFINITY;
  if (j < n) {
    float acc = 0.0f;
#pragma unroll
    for (int c = 0; c < kHd / 8; ++c) {
      float kv[8];
      bf16x8(*reinterpret_cast<const uint4*>(ktile + j * kKRowPad + c * 16), kv);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc = fmaf(sm.q[h][c * 8 + i], kv[i], acc);
    }
    s = acc * rsqrtf(static_cast<float>(kHd));
  }
  float m = warp_max(s);
  if (lane == 0) sm.red[warp] = m;
  __syncthreads();
  m = fmaxf(sm.red[2 * h], sm.red[2 * h + 1]);
  const float pj = j < n ? __expf(s - m) : 0.0f;
  sm.p[h][j] = pj;
  float l = warp_sum(pj);
  __syncthreads();
  if (lane == 0) sm.red[warp] = l;
  __syncthreads();
  l = sm.red[2 * h] + sm.red[2 * h + 1];
  // P V: thread (head h, dims 2 (t % 64), +1).
  const int d = 2 * j;
  float o0 = 0.0f, o1 = 0.0f;
  for (int k = 0; k < n; ++k) {
    const __nv_bfloat162 vv = *reinterpret_cast<const __nv_bfloat162*>(vtile + k * kKRowPad + d * 2);
    o0 = fmaf(sm.p[h][k], __low2float(vv), o0);
    o1 = fmaf(sm.p[h][k], __high2float(vv), o1);
  }
  if (j == 0) part[h] = m, part[kGroup + h] = l;
  part[2 * kGroup + h * kHd + d] = o0;
  part[2 * kGroup + h * kHd + d + 1] = o1;
  __syncthreads();  // the tiles and sm.p are reused by the block's next item
}

__global__ void __launch_bounds__(kThreads, 1) persistent_step_kernel(Step st) {
  extern __shared__ __align__(128) uint8_t smem_raw[];
  Smem& sm = *reinterpret_cast<Smem*>(smem_raw);
  const int b = blockIdx.x, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  Plan pl;
  pl.init(b, st.held_max, warp);
  WarpStream ws;
  uint8_t* ring = sm.rings[warp];
  uint64_t* bars = sm.bars[warp];
  unsigned phase_count = 0;
  const auto mark = [&](int at) {
    if (st.marks && threadIdx.x == 0) {
      unsigned long long t;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      st.marks[int64_t{at} * gridDim.x + b] = t;
    }
  };
  const auto barrier = [&](int phase) {
    grid_barrier(st.barrier, ++phase_count * gridDim.x);
    mark(phase + 1);
  };
  if (lane == 0)
    for (int i = 0; i < kRing; ++i) mbar_init(&bars[i], 32);
  if (threadIdx.x == 0) mbar_init(&sm.held_full, kThreads);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  mark(0);
  const int held_rows = pl.held;
  // The held rows of a layer's qkv: every thread copies its share and arrives on held_full once they land.
  const auto load_held = [&](const LayerWeights& w) {
    const uint8_t* src = reinterpret_cast<const uint8_t*>(w.qkv + int64_t{pl.q0} * kD);
    for (int c = threadIdx.x; c < held_rows * kD * 2 / 16; c += kThreads) cp_async16(sm.held + c * 16, src + c * 16);
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_addr(&sm.held_full)) : "memory");
  };
  load_held(st.layers[0]);
  const int n_ranges = (st.n_keys + kRangeKeys - 1) / kRangeKeys, n_items = kKvHeads * n_ranges;
  const int total = pl.per_layer * kLayers;
  // Issue what is known: up to this layer's expert stages before the routing, up to the next layer's after.
  const auto top_up = [&](int layer, bool routed) {
    ws.top_up(ring, bars, pl, st, sm.ids, min(total, layer * pl.per_layer + (routed ? pl.per_layer + pl.sg : pl.sg)));
  };
  // A dense phase's rows of this warp (row u of `units`: out[warp + 16 u]), each `parts` streamed stages dotted with x.
  const auto dense_rows = [&](int layer, int units, int parts, float* out) {
    for (int u = 0; u < units; ++u) {
      float acc = 0.0f;
      for (int part = 0; part < parts; ++part) {
        acc += part_dot(ws.next(ring, bars), sm.x + part * (kStageBytes / 2), kStageBytes / 2, lane);
        ws.done();
        top_up(layer, false);
      }
      acc = warp_sum(acc);
      if (lane == 0) out[warp + kWarps * u] = acc;
    }
  };
  for (int layer = 0; layer < kLayers; ++layer) {
    const LayerWeights& w = st.layers[layer];
    const int ph0 = layer * kPhases;
    // P1: qkv.
    top_up(layer, false);
    residual_norm(sm, st.resid + kD, st.moe_out, w.attn_norm, st.resid);
    if (warp < held_rows) {
      mbar_wait(&sm.held_full, layer & 1, 1ll << 30);
      const float v = warp_sum(part_dot(reinterpret_cast<const bf16*>(sm.held) + warp * kD, sm.x, kD, lane));
      if (lane == 0) st.qkv_out[pl.q0 + warp] = v;
    }
    dense_rows(layer, pl.nq, 2, st.qkv_out + pl.q0 + held_rows);
    barrier(ph0);
    // P3: attention items.
    for (int it = b; it < n_items; it += gridDim.x)
      attention_item(sm, st, w, it / n_ranges, it % n_ranges, st.parts + int64_t{it} * kPartFloats);
    barrier(ph0 + 1);
    // P4a: merge; block b < 128: head b / 4, dims 32 (b % 4) .. +31, warp 0.
    if (warp == 0) {
      for (int t = b; t < kHeads * 4; t += gridDim.x) {
        const int head = t / 4, kvh = head / kGroup, hh = head % kGroup, d = (t % 4) * 32 + lane;
        float mx = -INFINITY;
        for (int r0 = 0; r0 < n_ranges; r0 += 32) {
          const int r = r0 + lane;
          if (r < n_ranges) mx = fmaxf(mx, __ldcg(st.parts + int64_t{kvh * n_ranges + r} * kPartFloats + hh));
        }
        mx = warp_max(mx);
        float l = 0.0f, o = 0.0f;
        for (int r = 0; r < n_ranges; ++r) {
          const float* pr = st.parts + int64_t{kvh * n_ranges + r} * kPartFloats;
          const float f = __expf(__ldcg(pr + hh) - mx);
          l = fmaf(f, __ldcg(pr + kGroup + hh), l);
          o = fmaf(f, __ldcg(pr + 2 * kGroup + hh * kHd + d), o);
        }
        st.attn_out[head * kHd + d] = __float2bfloat16_rn(o / l);
      }
    }
    barrier(ph0 + 2);
    // P4b: o_proj.
    reinterpret_cast<uint4*>(sm.x)[threadIdx.x] = __ldcg(reinterpret_cast<const uint4*>(st.attn_out) + threadIdx.x);
    __syncthreads();
    dense_rows(layer, pl.no, 4, st.o_out + pl.o0);
    barrier(ph0 + 3);
    // P5: residual, norm, router; the next layer's held qkv rows start loading.
    if (layer + 1 < kLayers && held_rows > 0) {
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      load_held(st.layers[layer + 1]);
    }
    residual_norm(sm, st.resid, st.o_out, w.ffn_norm, st.resid + kD);
    dense_rows(layer, pl.nr, 2, st.logits + pl.r0);
    barrier(ph0 + 4);
    // P6: routing in every block (softmax, rank by 64-bit keys as moe_route's rank kernel), then gate/up.
    {
      const int e = threadIdx.x;
      float score = 0.0f;
      if (e < kExperts) {
        const float lg = __ldcg(st.logits + e);
        float mx = warp_max(lg);
        if (lane == 0) sm.red[warp] = mx;
        asm volatile("bar.sync 2, 128;" ::: "memory");
        mx = fmaxf(fmaxf(sm.red[0], sm.red[1]), fmaxf(sm.red[2], sm.red[3]));
        const float ex = __expf(lg - mx);
        float sum = warp_sum(ex);
        asm volatile("bar.sync 2, 128;" ::: "memory");
        if (lane == 0) sm.red[warp] = sum;
        asm volatile("bar.sync 2, 128;" ::: "memory");
        sum = sm.red[0] + sm.red[1] + sm.red[2] + sm.red[3];
        score = ex / sum;
        const uint32_t uk = __float_as_uint(score + 0.0f);
        const uint32_t key = (uk & 0x80000000u) ? ~uk : (uk | 0x80000000u);
        sm.keys[e] = uint64_t{key} << 32 | (0xffffffffu - static_cast<uint32_t>(e));
        asm volatile("bar.sync 2, 128;" ::: "memory");
        int rank = 0;
#pragma unroll 8
        for (int i = 0; i < kExperts; ++i) rank += sm.keys[i] > sm.keys[e];
        if (rank < kTopK) sm.ids[rank] = e, sm.weights[rank] = score;
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        float sum = 0.0f;
        for (int i = 0; i < kTopK; ++i) sum += sm.weights[i];
        for (int i = 0; i < kTopK; ++i) sm.weights[i] /= sum;
      }
    }
    top_up(layer, true);
    for (int u = 0; u < pl.ng; ++u) {
      float g = 0.0f, up = 0.0f;
      for (int part = 0; part < 4; ++part) {
        const float v = part_dot(ws.next(ring, bars), sm.x + (part % 2) * (kStageBytes / 2), kStageBytes / 2, lane);
        (part < 2 ? g : up) += v;
        ws.done();
        top_up(layer, true);
      }
      g = warp_sum(g), up = warp_sum(up);
      if (lane == 0) st.h[pl.g0 + warp + kWarps * u] = g / (1.0f + __expf(-g)) * up;
    }
    barrier(ph0 + 5);
    // P7: down: warp w, expert w / 2, its h in registers (three 8-wide chunks a lane).
    {
      const int nrows = pl.o1 - pl.o0, j = warp >> 1;
      float hv[3][8];
#pragma unroll
      for (int c = 0; c < 3; ++c) {
        const float4* hp = reinterpret_cast<const float4*>(st.h + j * kInter + (lane + 32 * c) * 8);
        const float4 a = __ldcg(hp), bb = __ldcg(hp + 1);
        hv[c][0] = a.x, hv[c][1] = a.y, hv[c][2] = a.z, hv[c][3] = a.w;
        hv[c][4] = bb.x, hv[c][5] = bb.y, hv[c][6] = bb.z, hv[c][7] = bb.w;
      }
      for (int u = 0; u < pl.nd; ++u) {
        const bf16* wrow = ws.next(ring, bars);
        float acc = 0.0f;
#pragma unroll
        for (int c = 0; c < 3; ++c) {
          float wv[8];
          bf16x8(*reinterpret_cast<const uint4*>(wrow + (lane + 32 * c) * 8), wv);
#pragma unroll
          for (int i = 0; i < 8; ++i) acc = fmaf(wv[i], hv[c][i], acc);
        }
        ws.done();
        top_up(layer, true);
        acc = warp_sum(acc);
        if (lane == 0) sm.down_part[(warp & 1) + 2 * u][j] = sm.weights[j] * acc;
      }
      __syncthreads();
      if (threadIdx.x < nrows) {
        float sum = 0.0f;
        for (int jj = 0; jj < kTopK; ++jj) sum += sm.down_part[threadIdx.x][jj];
        st.moe_out[pl.o0 + threadIdx.x] = sum;
      }
    }
    top_up(layer + 1, false);
    barrier(ph0 + 6);
  }
}

__global__ void fill_kernel(bf16* p, size_t n, uint32_t seed, float scale, float offset) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    uint32_t x = static_cast<uint32_t>(i) * 0x9E3779B1u ^ seed ^ static_cast<uint32_t>(i >> 32) * 0x85EBCA77u;
    x ^= x >> 15, x *= 0x2C1B3C6Du, x ^= x >> 12, x *= 0x297A2D39u, x ^= x >> 15;
    p[i] = __float2bfloat16_rn(offset + scale * (static_cast<float>(x) * 2.3283064e-10f * 2.0f - 1.0f));
  }
}

bf16* random_bf16(size_t n, uint32_t seed, float scale, float offset = 0.0f) {
  bf16* p = nullptr;
  CHECK(cudaMalloc(&p, n * sizeof(bf16)));
  fill_kernel<<<1024, 256>>>(p, n, seed, scale, offset);
  CHECK(cudaGetLastError());
  return p;
}

// Waits for the device, polling the stuck-wait report; prints it, or every block's last barrier after 20 s, and exits.
void wait_device(const unsigned long long* diag, const unsigned* progress, int n_sm) {
  const auto t0 = std::chrono::steady_clock::now();
  const volatile unsigned long long* d = diag;
  double s = 0.0;
  cudaError_t q;
  while ((q = cudaStreamQuery(nullptr)) == cudaErrorNotReady && !d[0] && s < 20.0)
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (q == cudaSuccess && !d[0]) return;
  std::printf("after %.1f s: %s; stuck report %llu: block %llu thread %llu waited for %lld (arg %llx)\n", s,
              cudaGetErrorString(q), d[0], d[1], d[2], static_cast<long long>(d[3]), d[4]);
  unsigned lo = ~0u, hi = 0;
  for (int i = 0; i < n_sm; ++i) lo = std::min(lo, progress[i]), hi = std::max(hi, progress[i]);
  std::printf("blocks passed barriers %u..%u:\n", lo, hi);
  for (int i = 0; i < n_sm; ++i) std::printf("%u%c", progress[i], i % 33 == 32 ? '\n' : ' ');
  std::printf("\n");
  std::fflush(stdout);
  std::_Exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  const int n_keys = argc > 1 ? std::atoi(argv[1]) : 400, reps = argc > 2 ? std::atoi(argv[2]) : 20;
  const int held = argc > 3 ? std::atoi(argv[3]) : kHeldRows;
  if (n_keys < 1 || n_keys > 65536 || reps < 1 || held < 0 || held > kHeldRows) {
    std::fprintf(stderr, "bench_persistent_layer: keys must be 1..65536, reps positive, held 0..%d\n", kHeldRows);
    return 1;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int dev = 0, n_sm = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, dev));
  const size_t smem = sizeof(Smem);
  std::printf("bench_persistent_layer: %s, %d SMs, %zu B of shared memory a block, %d keys, %d held rows\n", prop.name,
              n_sm, smem, n_keys, held);
  if (prop.major < 9 || smem > prop.sharedMemPerBlockOptin || n_sm < kExperts / 2 || n_sm > 256) {
    std::printf("needs sm_90, %zu B of shared memory a block and 64-256 SMs\n", smem);
    return 1;
  }
  uint32_t seed = 1;
  std::vector<LayerWeights> layers(kLayers);
  for (auto& l : layers) {
    l.qkv = random_bf16(size_t{kQkvRows} * kD, ++seed, 0.03f);
    l.o = random_bf16(size_t{kD} * kQRows, ++seed, 0.02f);
    l.router = random_bf16(size_t{kExperts} * kD, ++seed, 0.05f);
    l.gate_up = random_bf16(size_t{kExperts} * 2 * kInter * kD, ++seed, 0.03f);
    l.down = random_bf16(size_t{kExperts} * kD * kInter, ++seed, 0.03f);
    l.attn_norm = random_bf16(kD, ++seed, 0.1f, 1.0f);
    l.ffn_norm = random_bf16(kD, ++seed, 0.1f, 1.0f);
    l.q_norm = random_bf16(kHd, ++seed, 0.1f, 1.0f);
    l.k_norm = random_bf16(kHd, ++seed, 0.1f, 1.0f);
    l.k_cache = random_bf16(static_cast<size_t>(n_keys) * kKvHeads * kHd, ++seed, 1.0f);
    l.v_cache = random_bf16(static_cast<size_t>(n_keys) * kKvHeads * kHd, ++seed, 1.0f);
  }
  unsigned long long* diag = nullptr;
  unsigned* progress = nullptr;
  CHECK(cudaHostAlloc(&diag, 8 * sizeof(unsigned long long), cudaHostAllocMapped));
  CHECK(cudaHostAlloc(&progress, static_cast<size_t>(n_sm) * sizeof(unsigned), cudaHostAllocMapped));
  std::fill(diag, diag + 8, 0ull);
  std::fill(progress, progress + n_sm, 0u);
  unsigned long long* d_diag = nullptr;
  unsigned* d_progress = nullptr;
  CHECK(cudaHostGetDevicePointer(&d_diag, diag, 0));
  CHECK(cudaHostGetDevicePointer(&d_progress, progress, 0));
  CHECK(cudaMemcpyToSymbol(g_diag, &d_diag, sizeof(d_diag)));
  CHECK(cudaMemcpyToSymbol(g_progress, &d_progress, sizeof(d_progress)));
  CHECK(cudaDeviceSynchronize());
  std::printf("weights filled\n");
  LayerWeights* d_layers = nullptr;
  CHECK(cudaMalloc(&d_layers, sizeof(LayerWeights) * kLayers));
  CHECK(cudaMemcpy(d_layers, layers.data(), sizeof(LayerWeights) * kLayers, cudaMemcpyHostToDevice));
  const int n_items = kKvHeads * ((n_keys + kRangeKeys - 1) / kRangeKeys);
  Step st{};
  st.layers = d_layers;
  st.n_keys = n_keys;
  st.held_max = held;
  float* act = nullptr;
  const size_t act_floats =
      2 * kD + kD + kQkvRows + static_cast<size_t>(n_items) * kPartFloats + kD + kExperts + kTopK * kInter;
  CHECK(cudaMalloc(&act, act_floats * sizeof(float)));
  st.resid = act;
  st.moe_out = st.resid + 2 * kD;
  st.qkv_out = st.moe_out + kD;
  st.parts = st.qkv_out + kQkvRows;
  st.o_out = st.parts + static_cast<size_t>(n_items) * kPartFloats;
  st.logits = st.o_out + kD;
  st.h = st.logits + kExperts;
  CHECK(cudaMalloc(&st.attn_out, kQRows * sizeof(bf16)));
  CHECK(cudaMalloc(&st.barrier, sizeof(unsigned)));
  const int n_marks = kLayers * kPhases + 1;
  unsigned long long* marks = nullptr;
  CHECK(cudaMalloc(&marks, sizeof(unsigned long long) * n_marks * n_sm));
  std::vector<float> embed(kD);
  for (int i = 0; i < kD; ++i) embed[i] = std::sin(0.37f * static_cast<float>(i));
  CHECK(cudaFuncSetAttribute(persistent_step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem)));
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, persistent_step_kernel, kThreads, smem));
  if (per_sm < 1) {
    std::printf("the kernel does not fit an SM\n");
    return 1;
  }
  // A step's input: the residual and MoE output reset (the same input every step), the barrier zeroed.
  const auto reset = [&] {
    CHECK(cudaMemcpy(st.resid + kD, embed.data(), kD * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(st.moe_out, 0, kD * sizeof(float)));
    CHECK(cudaMemset(st.barrier, 0, sizeof(unsigned)));
  };
  const auto launch = [&](unsigned long long* with_marks) {
    Step s = st;
    s.marks = with_marks;
    void* args[] = {&s};
    CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(persistent_step_kernel), dim3(n_sm), dim3(kThreads), args,
                                      smem, nullptr));
  };
  std::vector<float> out_a(kD), out_b(kD);
  reset();
  launch(nullptr);
  wait_device(diag, progress, n_sm);
  std::printf("first step done\n");
  CHECK(cudaMemcpy(out_a.data(), st.moe_out, kD * sizeof(float), cudaMemcpyDeviceToHost));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> ms(reps);
  for (int r = 0; r < reps; ++r) {
    reset();
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventRecord(a));
    launch(nullptr);
    CHECK(cudaEventRecord(b));
    wait_device(diag, progress, n_sm);
    CHECK(cudaEventElapsedTime(&ms[r], a, b));
  }
  CHECK(cudaMemcpy(out_b.data(), st.moe_out, kD * sizeof(float), cudaMemcpyDeviceToHost));
  bool same = true, finite = true;
  for (int i = 0; i < kD; ++i) same &= out_a[i] == out_b[i], finite &= std::isfinite(out_a[i]);
  std::sort(ms.begin(), ms.end());
  const double med_us = ms[reps / 2] * 1e3;
  // Bytes a step streams (every weight but the unpicked experts) against the copy rate the caller measures.
  const double layer_bytes = 2.0 * (double{kQkvRows} * kD + double{kD} * kQRows + double{kExperts} * kD +
                                    double{kTopK} * (2.0 * kInter * kD + double{kD} * kInter));
  std::printf("step of %d layers: median %.1f us (min %.1f), %.2f us a layer, %.2f MB a layer: %.0f GB/s\n", kLayers,
              med_us, ms[0] * 1e3, med_us / kLayers, layer_bytes / 1e6, layer_bytes * kLayers / (med_us * 1e-6) / 1e9);
  std::printf("output %s, %s across runs\n", finite ? "finite" : "NOT FINITE", same ? "bitwise equal" : "DIFFERENT");
  reset();
  launch(marks);
  wait_device(diag, progress, n_sm);
  std::vector<unsigned long long> mk(static_cast<size_t>(n_marks) * n_sm);
  CHECK(cudaMemcpy(mk.data(), marks, mk.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  const char* names[kPhases] = {"P1 qkv",    "P3 attention",     "P4a merge", "P4b o_proj",
                                "P5 router", "P6 route+gate_up", "P7 down"};
  std::vector<double> sum(kPhases, 0.0);
  const auto mean_at = [&](int m) {
    double s = 0.0;
    for (int i = 0; i < n_sm; ++i) s += static_cast<double>(mk[static_cast<size_t>(m) * n_sm + i] - mk[i]);
    return s / n_sm / 1e3;
  };
  for (int l = 0; l < kLayers; ++l)
    for (int p = 0; p < kPhases; ++p) sum[p] += mean_at(l * kPhases + p + 1) - mean_at(l * kPhases + p);
  std::printf("per layer (from the barriers' release times, us, mean of %d layers):\n", kLayers);
  double total = 0.0;
  for (int p = 0; p < kPhases; ++p) std::printf("  %-18s %.2f\n", names[p], sum[p] / kLayers), total += sum[p];
  std::printf("  %-18s %.2f\n", "layer", total / kLayers);
  return 0;
}
