// CudaStream: stream, cuBLASLt handle and fixed scratch, created together and destroyed together.
#include "backend/cuda/cuda_stream.h"

#include "backend/cuda/pdl.cuh"

#include <cstdlib>
#include <string>

namespace ft::cuda {

Status cuda_status(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return ok_status();
  if (err == cudaErrorMemoryAllocation) return out_of_memory(std::string(what) + ": " + cudaGetErrorString(err));
  return internal_error(std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

Result<std::unique_ptr<CudaStream>> CudaStream::create(int device_index, bool scratch) {
  std::unique_ptr<CudaStream> s(new CudaStream(device_index));
  FT_RETURN_IF_ERROR(cuda_status(cudaSetDevice(device_index), "cudaSetDevice"));
  FT_RETURN_IF_ERROR(cuda_status(cudaDeviceGetAttribute(&s->n_sm_, cudaDevAttrMultiProcessorCount, device_index),
                                 "cudaDeviceGetAttribute"));
  FT_RETURN_IF_ERROR(
      cuda_status(cudaDeviceGetAttribute(&s->max_block_smem_, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_index),
                  "cudaDeviceGetAttribute"));
  const char* env = std::getenv("FT_CUDA_PDL");
  int major = 0;
  FT_RETURN_IF_ERROR(cuda_status(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_index),
                                 "cudaDeviceGetAttribute"));
  const bool sm90_code = sm90_code_on_current_device();
  s->max_cluster_blocks_ = !sm90_code ? 1 : major == 9 ? 16 : 8;
  s->pdl_ = sm90_code && !(env && std::string(env) == "0");
  FT_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&s->stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
  if (!scratch) return s;
  if (cublasLtCreate(&s->lt_) != CUBLAS_STATUS_SUCCESS) return internal_error("cublasLtCreate failed");
  FT_RETURN_IF_ERROR(cuda_status(cudaMalloc(&s->lt_workspace_, kLtWorkspaceBytes), "cuBLASLt workspace"));
  FT_RETURN_IF_ERROR(cuda_status(cudaMalloc(reinterpret_cast<void**>(&s->attention_scratch_), kAttentionScratchBytes),
                                 "attention scratch"));
  return s;
}

CudaStream::~CudaStream() {
  for (auto& [key, plan] : lt_plans_) {
    if (plan.a) cublasLtMatrixLayoutDestroy(plan.a);
    if (plan.b) cublasLtMatrixLayoutDestroy(plan.b);
    if (plan.d) cublasLtMatrixLayoutDestroy(plan.d);
    if (plan.desc) cublasLtMatmulDescDestroy(plan.desc);
  }
  if (stream_) cudaStreamSynchronize(stream_);
  if (attention_scratch_) cudaFree(attention_scratch_);
  if (lt_workspace_) cudaFree(lt_workspace_);
  if (lt_) cublasLtDestroy(lt_);
  if (stream_) cudaStreamDestroy(stream_);
}

Status CudaStream::synchronize() { return cuda_status(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

}  // namespace ft::cuda
