// CudaBackend: plain cudaMalloc device memory (zero-filled), one stream, copies with cudaMemcpyAsync.
#include "backend/cuda/cuda_backend.h"

#include <string>

#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/cuda_stream.h"

namespace ft {
namespace {

class CudaBuffer final : public Buffer {
 public:
  CudaBuffer(void* data, size_t size, Device device) : Buffer(data, size, device) {}
  ~CudaBuffer() override { cudaFree(data_); }
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device_index, std::unique_ptr<cuda::CudaStream> stream)
      : device_{DeviceType::kCuda, device_index}, stream_(std::move(stream)) {}
  const char* name() const override { return "cuda"; }
  Device device() const override { return device_; }
  const OpTable& ops() const override { return cuda_op_table(); }
  Stream& stream() override { return *stream_; }

  Result<std::shared_ptr<Buffer>> allocate(size_t bytes) override {
    void* p = nullptr;
    FT_RETURN_IF_ERROR(cuda::cuda_status(cudaMalloc(&p, bytes == 0 ? 1 : bytes),
                                         ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str()));
    auto buf = std::make_shared<CudaBuffer>(p, bytes, device_);
    FT_RETURN_IF_ERROR(cuda::cuda_status(cudaMemsetAsync(p, 0, bytes, stream_->get()), "cudaMemsetAsync"));
    FT_RETURN_IF_ERROR(stream_->synchronize());
    return std::shared_ptr<Buffer>(std::move(buf));
  }

  Status copy(const Tensor& src, const Tensor& dst) override {
    if (src.dtype != dst.dtype || !same_shape(src, dst) || !src.is_contiguous() || !dst.is_contiguous())
      return invalid_argument("copy: " + src.shape_string() + " -> " + dst.shape_string());
    for (const Tensor* t : {&src, &dst})
      if (!t->device().is_cpu() && t->device() != device_) return unsupported("copy: tensor on another device");
    if (src.nbytes() == 0) return ok_status();
    return cuda::cuda_status(cudaMemcpyAsync(dst.data(), src.data(), src.nbytes(), cudaMemcpyDefault, stream_->get()),
                             "cudaMemcpyAsync");
  }

 private:
  Device device_;
  std::unique_ptr<cuda::CudaStream> stream_;
};

}  // namespace

Result<std::unique_ptr<Backend>> create_cuda_backend(const BackendOptions& options) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the sticky "no device" error
    return unsupported("no CUDA device is present");
  }
  if (options.device_index < 0 || options.device_index >= count)
    return invalid_argument("CUDA device " + std::to_string(options.device_index) + " does not exist (" +
                            std::to_string(count) + " present)");
  FT_ASSIGN_OR_RETURN(auto stream, cuda::CudaStream::create(options.device_index));
  return std::unique_ptr<Backend>(new CudaBackend(options.device_index, std::move(stream)));
}

}  // namespace ft
