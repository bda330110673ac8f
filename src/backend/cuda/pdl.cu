// Whether the kernels of this build run their sm_90 code (programmatic dependent launch, clusters) on the current
// device.
#include <map>
#include <mutex>

#include "backend/cuda/pdl.cuh"

namespace ft::cuda {
namespace {

// The architecture of the code the device runs for this build (the machine code for it, or the driver's compile
// of the newest PTX the build holds).
__global__ void arch_probe_kernel(int* arch) {
#ifdef __CUDA_ARCH__
  *arch = __CUDA_ARCH__;
#endif
}

bool probe_current_device() {
  int* arch = nullptr;
  if (cudaMalloc(&arch, sizeof(int)) != cudaSuccess) return false;
  int host = 0;
  const bool ok = cudaMemset(arch, 0, sizeof(int)) == cudaSuccess &&
                  (arch_probe_kernel<<<1, 1>>>(arch), cudaGetLastError() == cudaSuccess) &&
                  cudaMemcpy(&host, arch, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(arch);
  return ok && host >= 900;
}

}  // namespace

bool sm90_code_on_current_device() {
  // Below sm_90 pdl_wait_then_release() is empty: kernels launched as dependents would not wait.
  static std::mutex mutex;
  static std::map<int, bool> by_device;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto it = by_device.find(device);
  return it != by_device.end() ? it->second : by_device[device] = probe_current_device();
}

}  // namespace ft::cuda
