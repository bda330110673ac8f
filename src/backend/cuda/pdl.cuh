// Programmatic dependent launch (sm_90+): a kernel launched with launch_pdl may start while the kernel before it
// on the stream is still running, run a prologue that touches nothing that kernel writes (loads of its weights),
// and wait for it in pdl_wait_then_release(). This hides the launch gap between the small kernels of a decode
// step and overlaps the weight stream of a GEMV with the latency-bound kernel before it. Inside captured graphs
// the dependency becomes a programmatic edge.
//
// The rule every kernel launched with launch_pdl keeps: pdl_wait_then_release() runs in every thread before the thread
// reads anything an earlier kernel of the stream writes or writes anything an earlier kernel reads or writes, and
// before any early return (a kernel that ends without waiting would let the kernels after it run ahead of the ones
// before it). What only host copies write (a step's positions, slots, sequence starts, kv lengths and page table,
// copied before the step's first kernel, which waits for the copies) may be read before it. It lets the next kernel
// start only after the wait, so once a kernel starts, every kernel two or more launches before it has finished, and a
// prologue may read their outputs (the expert ids of the down GEMV, written by the router two launches back); plainly
// launched kernels start after everything before them and release nothing early. That follows from what
// griddepcontrol.wait guarantees (the prerequisite grid has completed and its writes are visible) and from a dependent
// starting only once every block of the kernel before it has triggered; CUDA does not state it as such.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

namespace ft::cuda {

// Waits for the kernel before (its writes are then visible), then lets the kernel after this one start.
__device__ __forceinline__ void pdl_wait_then_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// True when the current device runs this build's code for sm_90 or later: its kernels then wait in
// pdl_wait_then_release() and may use thread-block clusters; CudaStream turns PDL and clusters on only then.
bool sm90_code_on_current_device();

// kernel<<<grid, block, smem, stream>>>(args...) in thread-block clusters of `cluster` blocks (none when 1 x 1 x 1),
// as a programmatic dependent of the previous kernel when `pdl`.
template <class... Params, class... Args>
cudaError_t launch_pdl_in_clusters(bool pdl, dim3 cluster, void (*kernel)(Params...), dim3 grid, dim3 block,
                                   size_t smem, cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attrs[2]{};
  unsigned n_attrs = 0;
  if (pdl) {
    attrs[n_attrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n_attrs++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster.x * cluster.y * cluster.z > 1) {
    attrs[n_attrs].id = cudaLaunchAttributeClusterDimension;
    attrs[n_attrs].val.clusterDim.x = cluster.x;
    attrs[n_attrs].val.clusterDim.y = cluster.y;
    attrs[n_attrs++].val.clusterDim.z = cluster.z;
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attrs;
  cfg.numAttrs = n_attrs;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

// kernel<<<grid, block, smem, stream>>>(args...), as a programmatic dependent of the previous kernel when `pdl`.
template <class... Params, class... Args>
cudaError_t launch_pdl(bool pdl, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                       Args&&... args) {
  return launch_pdl_in_clusters(pdl, dim3(1, 1, 1), kernel, grid, block, smem, stream, std::forward<Args>(args)...);
}

}  // namespace ft::cuda
