// Expert cache ops on the device: the shared LRU algorithm in one thread (no host round trip, so a decode step
// stays capturable), record copies that read the pinned expert store over PCIe from every SM, chunk id remapping.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/vec_load.cuh"
#include "backend/expert_lru.h"

namespace ft::cuda {
namespace {

__global__ void lookup_kernel(expert_lru::Tables t, expert_lru::Pairs p, int64_t moe_layer, int64_t n_expert,
                              int32_t* fills) {
  expert_lru::lookup(t, p, moe_layer, n_expert, fills);
}

constexpr int kFillThreads = 256;
constexpr int kFillUnroll = 4;  // 16-byte loads in flight per thread

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Grid-stride over (fill, 16-byte chunk): dst[slot] = src[key_of[slot]]. Records are whole 16-byte chunks. With
// timing: the first block to start stamps timing[1], every block raises timing[2] to its end, and the last block
// to finish adds the difference to timing[0] and clears the scratch. Nothing to fill: every block returns at once
// (no time counted).
__global__ void __launch_bounds__(kFillThreads) fill_kernel(const uint4* src, uint4* dst, const int32_t* fills,
                                                            const int32_t* key_of, int64_t chunks,
                                                            unsigned long long* timing) {
  const int32_t n = fills[0];
  if (n == 0) return;
  if (timing && threadIdx.x == 0) atomicCAS(&timing[1], 0ull, global_ns());
  const int64_t total = n * chunks, step = int64_t{gridDim.x} * kFillThreads * kFillUnroll;
  for (int64_t base = (int64_t{blockIdx.x} * kFillThreads) * kFillUnroll + threadIdx.x; base < total; base += step) {
    uint4 v[kFillUnroll];
    int64_t at[kFillUnroll];
#pragma unroll
    for (int u = 0; u < kFillUnroll; ++u) {
      const int64_t i = base + u * kFillThreads;
      at[u] = -1;
      if (i < total) {
        const int32_t slot = fills[1 + i / chunks];
        const int64_t c = i % chunks;
        v[u] = src[key_of[slot] * chunks + c];
        at[u] = slot * chunks + c;
      }
    }
#pragma unroll
    for (int u = 0; u < kFillUnroll; ++u)
      if (at[u] >= 0) dst[at[u]] = v[u];
  }
  if (!timing) return;
  __syncthreads();  // the block's copies are done
  if (threadIdx.x != 0) return;
  atomicMax(&timing[2], global_ns());
  __threadfence();
  if (atomicAdd(&timing[3], 1ull) != gridDim.x - 1) return;
  timing[0] += atomicAdd(&timing[2], 0ull) - atomicAdd(&timing[1], 0ull);
  timing[1] = timing[2] = timing[3] = 0;
}

__global__ void chunk_ids_kernel(const int32_t* ids, int64_t ld, int32_t* out, int64_t out_ld, int64_t n, int64_t k,
                                 int64_t first, int64_t count) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= n * k) return;
  const int32_t e = ids[i / k * ld + i % k];
  out[i / k * out_ld + i % k] = e >= first && e < first + count ? static_cast<int32_t>(e - first) : -1;
}

}  // namespace

Status moe_cache_lookup(const Tensor& ids, const ExpertCacheTables& tables, const Tensor& slot_ids,
                        const Tensor& cpu_ids, const Tensor& fills, const MoeCacheLookupParams& p, Stream& s) {
  FT_RETURN_IF_ERROR(device_check("moe_cache_lookup", {&ids, &slot_ids, &cpu_ids, &fills, &tables.slot_of,
                                                       &tables.key_of, &tables.lru, &tables.mark, &tables.calls,
                                                       &tables.share, &tables.stats, &tables.miss_keys}));
  FT_ASSIGN_OR_RETURN(expert_lru::Tables t, expert_lru::tables_of(tables, ids, slot_ids, cpu_ids, fills, p));
  lookup_kernel<<<1, 1, 0, cuda_stream(s).get()>>>(t, expert_lru::pairs_of(ids, slot_ids, cpu_ids), p.moe_layer,
                                                   p.n_expert, fills.ptr<int32_t>());
  return launch_status("moe_cache_lookup");
}

Status moe_cache_fill(const Tensor& src, const Tensor& dst, const Tensor& fills, const Tensor& key_of,
                      const Tensor& timing, Stream& s) {
  FT_RETURN_IF_ERROR(device_check("moe_cache_fill", {&src, &dst, &fills, &key_of, &timing}));
  FT_RETURN_IF_ERROR(expert_lru::check_fill(src, dst, fills, key_of, timing));
  if (src.dim(1) % 16 != 0 || !aligned16(src.data()) || !aligned16(dst.data()))
    return shape_error("moe_cache_fill", "records must be whole, aligned 16-byte chunks");
  CudaStream& cs = cuda_stream(s);
  fill_kernel<<<static_cast<unsigned>(cs.n_sm() * 2), kFillThreads, 0, cs.get()>>>(
      src.ptr<const uint4>(), dst.ptr<uint4>(), fills.ptr<const int32_t>(), key_of.ptr<const int32_t>(),
      src.dim(1) / 16, timing.defined() ? reinterpret_cast<unsigned long long*>(timing.data()) : nullptr);
  return launch_status("moe_cache_fill");
}

Status moe_chunk_ids(const Tensor& ids, int64_t first, int64_t count, const Tensor& out, Stream& s) {
  FT_RETURN_IF_ERROR(device_check("moe_chunk_ids", {&ids, &out}));
  FT_RETURN_IF_ERROR(expert_lru::check_chunk_ids(ids, out));
  const int64_t n = ids.numel();
  if (n == 0) return ok_status();
  chunk_ids_kernel<<<static_cast<unsigned>(grid_for(n, 256)), 256, 0, cuda_stream(s).get()>>>(
      ids.ptr<const int32_t>(), ids.stride[0], out.ptr<int32_t>(), out.stride[0], ids.dim(0), ids.dim(1), first, count);
  return launch_status("moe_chunk_ids");
}

}  // namespace ft::cuda
