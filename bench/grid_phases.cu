// bench_grid_phases: what the phase changes of a persistent decode kernel would cost on this GPU, against the
// kernel boundaries of today's decode graph (docs/perf.md, "Next"). Prints, in µs:
//  - a kernel boundary: one empty kernel of one block an SM after another, replayed from a CUDA graph;
//  - a dependent chain: kernels that each read what the one before wrote, by the grid sizes on either side of the
//    boundary, launched plainly and as programmatic dependents (PDL), as the decode step's kernels are;
//  - a grid barrier: every block of a co-resident (cooperative) grid arrives on a counter and waits for the others;
//  - a dependent exchange: each block writes a value, the grid barrier, each block reads another block's value (the
//    read after the barrier is what a phase's first load costs);
//  - a hand-off: one block publishes a flag and the next waits for it, in a chain of rounds (a last-block signal);
// and the bandwidth at which every SM copies a slice of a large buffer into its shared memory (cp.async), against
// streaming the same bytes through registers: how fast idle SMs could stage the next phase's weights.
//
//   bench_grid_phases [rounds=2000]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backend/cuda/pdl.cuh"

namespace {

#define CHECK(call)                                                                       \
  do {                                                                                    \
    const cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "bench_grid_phases: %s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

constexpr int kThreads = 256;

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void add_release(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void store_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Every block arrives on count (zero before the kernel) and waits until it reaches target = round * blocks.
__device__ __forceinline__ void grid_barrier(unsigned* count, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    add_release(count, 1);
    while (ld_acquire(count) < target) {
    }
  }
  __syncthreads();
}

enum Mode : int { kBarrier, kExchange, kHandOff };

// rounds of one mode over a co-resident grid; vals [2, blocks] (the exchange's two buffers), sink [blocks].
__global__ void phases_kernel(int mode, int rounds, unsigned* count, unsigned* flag, float* vals, float* sink) {
  const unsigned blocks = gridDim.x;
  float acc = 0.0f;
  for (int r = 1; r <= rounds; ++r) {
    if (mode == kBarrier) {
      grid_barrier(count, r * blocks);
    } else if (mode == kExchange) {
      float* buf = vals + (r & 1) * blocks;  // two buffers: a round's writes never meet the last round's reads
      if (threadIdx.x == 0) buf[blockIdx.x] = acc + static_cast<float>(r);
      grid_barrier(count, r * blocks);
      if (threadIdx.x == 0) acc += __ldcg(buf + (blockIdx.x + 1) % blocks);
    } else {  // round r: block r % blocks publishes r once it has seen r - 1
      if (threadIdx.x == 0 && blockIdx.x == static_cast<unsigned>(r) % blocks) {
        while (ld_acquire(flag) < static_cast<unsigned>(r - 1)) {
        }
        store_release(flag, r);
      }
    }
  }
  if (mode == kHandOff && threadIdx.x == 0)
    while (ld_acquire(flag) < static_cast<unsigned>(rounds)) {
    }
  if (threadIdx.x == 0) sink[blockIdx.x] = acc;
}

__global__ void empty_kernel() {}

// A link of a dependent chain: waits for the kernel before (when launched as its programmatic dependent) and lets the
// next one start, as the decode kernels do, then block 0 bumps the value the kernel before bumped (a real read of its
// output).
__global__ void chain_kernel(unsigned* v) {
  ft::cuda::pdl_wait_then_release();
  if (blockIdx.x == 0 && threadIdx.x == 0) *static_cast<volatile unsigned*>(v) += 1;
}

// Pass p of block b copies slice p * blocks + b of src (chunks_per_block 16-byte chunks: every byte read once, so from
// HBM) into shared memory, 16 bytes a thread at a time.
__global__ void to_shared_kernel(const uint4* src, size_t chunks_per_block, int reps) {
  extern __shared__ uint4 stage[];
  for (int rep = 0; rep < reps; ++rep) {
    const uint4* mine = src + (static_cast<size_t>(rep) * gridDim.x + blockIdx.x) * chunks_per_block;
    for (size_t c = threadIdx.x; c < chunks_per_block; c += blockDim.x) {
      const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(stage + c));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(mine + c) : "memory");
    }
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
    __syncthreads();
  }
}

// The same bytes through registers, summed so that the loads stay.
__global__ void through_registers_kernel(const uint4* src, size_t chunks_per_block, int reps, unsigned* sink) {
  unsigned x = 0;
  for (int rep = 0; rep < reps; ++rep) {
    const uint4* mine = src + (static_cast<size_t>(rep) * gridDim.x + blockIdx.x) * chunks_per_block;
    for (size_t c = threadIdx.x; c < chunks_per_block; c += blockDim.x) {
      const uint4 v = __ldcs(mine + c);
      x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  }
  if (x == 0x12345678u) sink[0] = x;  // never in practice; keeps the loads
}

float elapsed_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

// µs per round of `mode` over blocks co-resident blocks (a cooperative launch fails if they cannot be).
double per_round_us(int mode, int rounds, unsigned blocks, unsigned* count, unsigned* flag, float* vals, float* sink) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  double ms[2] = {};
  const int tries[2] = {0, rounds};
  for (int i = 0; i < 2; ++i) {
    int m = mode, n = tries[i];
    void* args[] = {&m, &n, &count, &flag, &vals, &sink};
    CHECK(cudaMemset(count, 0, sizeof(unsigned)));
    CHECK(cudaMemset(flag, 0, sizeof(unsigned)));
    CHECK(cudaEventRecord(a));
    CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(phases_kernel), dim3(blocks), dim3(kThreads), args));
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    ms[i] = elapsed_ms(a, b);
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return (ms[1] - ms[0]) * 1e3 / rounds;
}

// µs per launch of one replay (after a warm-up replay) of a graph captured from enqueue(stream), which launches
// `launches` kernels.
template <class Enqueue>
double replay_us(int launches, Enqueue enqueue) {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  enqueue(s);
  cudaGraph_t graph;
  CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, s));  // warm-up
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a, s));
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaEventRecord(b, s));
  CHECK(cudaEventSynchronize(b));
  const double us = elapsed_ms(a, b) * 1e3 / launches;
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s));
  return us;
}

double kernel_boundary_us(int launches, unsigned blocks) {
  return replay_us(launches, [&](cudaStream_t s) {
    for (int i = 0; i < launches; ++i) empty_kernel<<<blocks, kThreads, 0, s>>>();
  });
}

struct Grid {
  unsigned blocks, threads;
};

// µs per kernel of a chain of `launches` chain_kernels alternating between grids a and b, each a programmatic
// dependent of the one before when pdl.
double chain_us(int launches, Grid a, Grid b, bool pdl, unsigned* v) {
  return replay_us(launches, [&](cudaStream_t s) {
    for (int i = 0; i < launches; ++i) {
      const Grid g = i % 2 ? b : a;
      CHECK(ft::cuda::launch_pdl(pdl && i > 0, chain_kernel, dim3(g.blocks), dim3(g.threads), 0, s, v));
    }
  });
}

// What a kernel boundary costs by the size of the grids on either side of it, plainly launched and, where the device
// has programmatic dependent launch (sm_90 on), under PDL.
void dependent_chains(int n_sm, bool has_pdl, int rounds) {
  unsigned* v = nullptr;
  CHECK(cudaMalloc(&v, sizeof(unsigned)));
  CHECK(cudaMemset(v, 0, sizeof(unsigned)));
  const int links = std::min(rounds, 1000);
  const unsigned sm = static_cast<unsigned>(n_sm);
  const Grid one{1, 128}, pairs[][2] = {{one, one},
                                        {{16, 128}, {16, 128}},
                                        {{sm, 128}, {sm, 128}},
                                        {{5 * sm, 128}, {5 * sm, 128}},
                                        {{12 * sm, 128}, {12 * sm, 128}},
                                        {one, {4 * sm, 128}},
                                        {one, {12 * sm, 128}},
                                        {one, {3 * sm, 512}},
                                        {one, {2 * sm, 256}},
                                        {one, {5 * sm, 256}}};
  std::printf(
      "dependent chain (block 0 of each kernel bumps what the kernel before bumped), us a kernel, plain / PDL:\n");
  for (const auto& p : pairs) {
    std::printf("  %u blocks of %u threads <-> %u of %u: %.2f / ", p[0].blocks, p[0].threads, p[1].blocks, p[1].threads,
                chain_us(links, p[0], p[1], false, v));
    if (has_pdl)
      std::printf("%.2f\n", chain_us(links, p[0], p[1], true, v));
    else
      std::printf("no PDL on this device\n");
  }
  CHECK(cudaFree(v));
}

// GB/s of bytes_per_block per SM (one block an SM, reps passes over distinct bytes) into shared memory or through
// registers.
void staging_bandwidth(int n_sm, size_t bytes_per_block) {
  const int reps = 20;
  const size_t chunks = bytes_per_block / 16, total = chunks * 16 * static_cast<size_t>(n_sm);  // a pass
  uint4* src = nullptr;
  unsigned* sink = nullptr;
  CHECK(cudaMalloc(&src, total * reps));
  CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  CHECK(cudaMemset(src, 1, total * reps));
  CHECK(cudaFuncSetAttribute(to_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(bytes_per_block)));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int variant = 0; variant < 2; ++variant) {
    double best = 1e30;
    for (int t = 0; t < 3; ++t) {
      CHECK(cudaEventRecord(a));
      if (variant == 0)
        to_shared_kernel<<<n_sm, kThreads * 4, bytes_per_block>>>(src, chunks, reps);
      else
        through_registers_kernel<<<n_sm, kThreads * 4>>>(src, chunks, reps, sink);
      CHECK(cudaGetLastError());
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      best = std::min<double>(best, elapsed_ms(a, b));
    }
    std::printf("  %s, %zu KB a block, one block an SM: %.0f GB/s (%.1f MB in %.1f us a pass)\n",
                variant == 0 ? "into shared memory (cp.async)" : "through registers", bytes_per_block >> 10,
                static_cast<double>(total) * reps / (best * 1e-3) / 1e9, static_cast<double>(total) / 1e6,
                best * 1e3 / reps);
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  CHECK(cudaFree(src));
  CHECK(cudaFree(sink));
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 2000;
  if (rounds < 1) {
    std::fprintf(stderr, "bench_grid_phases: rounds must be a positive integer\n");
    return 1;
  }
  int dev = 0, n_sm = 0, coop = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("bench_grid_phases: %s, %d SMs, %d rounds\n", prop.name, n_sm, rounds);
  std::printf("kernel boundary (empty kernels of %d blocks from a graph): %.2f us\n", n_sm,
              kernel_boundary_us(rounds, static_cast<unsigned>(n_sm)));
  dependent_chains(n_sm, prop.major >= 9, rounds);
  if (!coop) {
    std::printf("no cooperative launch on this device: grid phases not measured\n");
  } else {
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, phases_kernel, kThreads, 0));
    unsigned *count = nullptr, *flag = nullptr;
    float *vals = nullptr, *sink = nullptr;
    const size_t max_blocks = static_cast<size_t>(n_sm) * static_cast<size_t>(per_sm);
    CHECK(cudaMalloc(&count, sizeof(unsigned)));
    CHECK(cudaMalloc(&flag, sizeof(unsigned)));
    CHECK(cudaMalloc(&vals, 2 * max_blocks * sizeof(float)));
    CHECK(cudaMalloc(&sink, max_blocks * sizeof(float)));
    std::vector<int> per_sm_tried{1};
    if (per_sm >= 4) per_sm_tried.push_back(4);
    for (int k : per_sm_tried) {
      const unsigned blocks = static_cast<unsigned>(n_sm * k);
      std::printf("%u blocks (%d an SM):\n", blocks, k);
      std::printf("  grid barrier: %.2f us\n", per_round_us(kBarrier, rounds, blocks, count, flag, vals, sink));
      std::printf("  write, barrier, read another block's value: %.2f us\n",
                  per_round_us(kExchange, rounds, blocks, count, flag, vals, sink));
      std::printf("  hand-off from one block to the next: %.2f us\n",
                  per_round_us(kHandOff, rounds, blocks, count, flag, vals, sink));
    }
    CHECK(cudaFree(count));
    CHECK(cudaFree(flag));
    CHECK(cudaFree(vals));
    CHECK(cudaFree(sink));
  }
  std::printf("staging weights:\n");
  // As much shared memory as one block may have, in 16 KB steps, up to 192 KB (99 KB on consumer parts).
  const size_t stage_bytes = std::min<size_t>(size_t{192} << 10, prop.sharedMemPerBlockOptin / (16 << 10) * (16 << 10));
  staging_bandwidth(n_sm, stage_bytes);
  return 0;
}
