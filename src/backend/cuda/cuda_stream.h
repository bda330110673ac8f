// CudaStream: the backend's CUDA stream plus the fixed device scratch its ops may use (cuBLASLt workspace,
// attention split partials), allocated once when the backend is created so that captured graphs replay.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <memory>
#include <tuple>

#include "backend/backend.h"

namespace ft::cuda {

// One cuBLASLt problem, planned once (descriptors and the heuristic's algorithm) and reused.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool usable = false;  // false: the heuristic found no algorithm (the caller falls back)
};
// n, m, k, ldx, ldw, ldo, out dtype, alignment of x / w / out (bytes).
using LtKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int, int>;

class CudaStream final : public Stream {
 public:
  static constexpr size_t kLtWorkspaceBytes = 32u << 20;
  static constexpr size_t kAttentionScratchBytes = 16u << 20;

  // scratch false: a plain queue (copies, host callbacks, ops that need neither cuBLASLt nor attention scratch).
  static Result<std::unique_ptr<CudaStream>> create(int device_index, bool scratch = true);
  ~CudaStream() override;
  Device device() const override { return {DeviceType::kCuda, device_index_}; }
  Status synchronize() override;

  cudaStream_t get() const { return stream_; }
  cublasLtHandle_t lt() const { return lt_; }
  void* lt_workspace() const { return lt_workspace_; }
  float* attention_scratch() const { return attention_scratch_; }
  int n_sm() const { return n_sm_; }
  // Whether decode-path kernels launch as programmatic dependents (pdl.cuh): when the build's code for this
  // device is sm_90 or later, unless the environment sets FT_CUDA_PDL=0 (for A/B measurements).
  bool pdl() const { return pdl_; }
  // The most blocks a kernel's thread-block cluster may have: 16 (a non-portable size) on sm_90 parts, the portable 8
  // on later ones, 1 (no clusters) where the device does not run the build's sm_90 code.
  int max_cluster_blocks() const { return max_cluster_blocks_; }
  // The shared memory a block may opt in to, bytes: 227 KB on sm_90, 163 KB on sm_80, 99 KB on the consumer parts.
  int max_block_smem() const { return max_block_smem_; }
  std::map<LtKey, LtPlan>& lt_plans() { return lt_plans_; }

 private:
  explicit CudaStream(int device_index) : device_index_(device_index) {}
  int device_index_;
  int n_sm_ = 0;
  bool pdl_ = false;
  int max_cluster_blocks_ = 1;
  int max_block_smem_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* lt_workspace_ = nullptr;       // kLtWorkspaceBytes
  float* attention_scratch_ = nullptr;  // kAttentionScratchBytes
  std::map<LtKey, LtPlan> lt_plans_;
};

inline CudaStream& cuda_stream(Stream& s) { return static_cast<CudaStream&>(s); }

// A Status naming the CUDA error of `err` (ok for cudaSuccess).
Status cuda_status(cudaError_t err, const char* what);
// The launch error of the last kernel, as a Status.
inline Status launch_status(const char* op) { return cuda_status(cudaGetLastError(), op); }

}  // namespace ft::cuda
