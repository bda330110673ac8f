// Eight consecutive elements as fp32 through 16-byte loads (one for bf16, two for f32), and back through 16-byte
// stores; the pointer must be 16-byte aligned. Weights streamed by the GEMVs (Chunk8::load) go through ld.global.nc:
// nothing writes them while a kernel reads them (the expert cache's fill kernel has finished before an expert GEMV
// loads a slot: after its wait, or two launches later). Activations, which a kernel launched as a programmatic
// dependent (pdl.cuh) may see written while it runs, go through plain loads.
#pragma once

#include "backend/cuda/common.cuh"

namespace ft::cuda {

__device__ __forceinline__ void load8(const bf16* p, float (&v)[8]) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = __uint_as_float(w[i] << 16);
    v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

__device__ __forceinline__ void load8(const float* p, float (&v)[8]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}

// Eight fp32 values rounded to T and stored through 16-byte stores (one for bf16, two for f32).
__device__ __forceinline__ void store8(bf16* p, const float (&v)[8]) {
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    w[i] = uint32_t{__bfloat16_as_ushort(from_f32<bf16>(v[2 * i]))} |
           (uint32_t{__bfloat16_as_ushort(from_f32<bf16>(v[2 * i + 1]))} << 16);
  *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ void store8(float* p, const float (&v)[8]) {
  reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}

// A 16-byte chunk of a weight that nothing else reads in this step: through the non-coherent path, not kept in L1,
// and first in line for eviction from the L2, so that the step's 2.4 GB of weights stream through the L2 without
// pushing out the KV cache and the activations the next kernels read (batch 1 +2%, docs/perf.md).
__device__ __forceinline__ uint4 ldg_evict_first(const uint4* p) {
  uint4 u;
  asm("{\n\t.reg .b64 policy;\n\tcreatepolicy.fractional.L2::evict_first.b64 policy, 1.0;\n\t"
      "ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], policy;\n\t}"
      : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
      : "l"(p));
  return u;
}

// Raw 16-byte chunks, so that several loads can be in flight before any is converted: load for weights (once: a
// weight read once in the step, as ldg_evict_first; a compile-time constant at the call sites), load_act for
// activations.
template <class T>
struct Chunk8;
template <>
struct Chunk8<bf16> {
  uint4 u;
  __device__ __forceinline__ void load(const bf16* p, bool once = false) {
    const auto* q = reinterpret_cast<const uint4*>(p);
    u = once ? ldg_evict_first(q) : __ldg(q);
  }
  __device__ __forceinline__ void load_act(const bf16* p) { u = *reinterpret_cast<const uint4*>(p); }
  __device__ __forceinline__ float get(int i) const {
    const uint32_t w = i < 2 ? u.x : i < 4 ? u.y : i < 6 ? u.z : u.w;
    return __uint_as_float((i & 1) ? (w & 0xffff0000u) : (w << 16));
  }
};
template <>
struct Chunk8<float> {
  float4 a, b;
  __device__ __forceinline__ void load(const float* p, bool once = false) {
    if (once) {
      const uint4 ua = ldg_evict_first(reinterpret_cast<const uint4*>(p));
      const uint4 ub = ldg_evict_first(reinterpret_cast<const uint4*>(p) + 1);
      a = make_float4(__uint_as_float(ua.x), __uint_as_float(ua.y), __uint_as_float(ua.z), __uint_as_float(ua.w));
      b = make_float4(__uint_as_float(ub.x), __uint_as_float(ub.y), __uint_as_float(ub.z), __uint_as_float(ub.w));
    } else {
      a = __ldg(reinterpret_cast<const float4*>(p));
      b = __ldg(reinterpret_cast<const float4*>(p) + 1);
    }
  }
  __device__ __forceinline__ void load_act(const float* p) {
    a = reinterpret_cast<const float4*>(p)[0];
    b = reinterpret_cast<const float4*>(p)[1];
  }
  __device__ __forceinline__ float get(int i) const {
    const float4& q = i < 4 ? a : b;
    const int j = i & 3;
    return j == 0 ? q.x : j == 1 ? q.y : j == 2 ? q.z : q.w;
  }
};

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace ft::cuda
