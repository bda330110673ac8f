// CudaBackend: plain cudaMalloc device memory (zero-filled), one stream, copies with cudaMemcpyAsync.
#include "backend/cuda/cuda_backend.h"

#include <string>
#include <vector>

#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/cuda_stream.h"

namespace ft {
namespace {

class CudaBuffer final : public Buffer {
 public:
  CudaBuffer(void* data, size_t size, Device device) : Buffer(data, size, device) {}
  ~CudaBuffer() override { cudaFree(data_); }
};

// Pinned host memory as the device addresses it; unpinned when the last view goes.
class MappedHostBuffer final : public Buffer {
 public:
  MappedHostBuffer(void* host, void* device_ptr, size_t size, Device device)
      : Buffer(device_ptr, size, device), host_(host) {}
  ~MappedHostBuffer() override { cudaHostUnregister(host_); }

 private:
  void* host_;
};

struct CudaEvent final : StreamEvent {
  cudaEvent_t event = nullptr;
  ~CudaEvent() override {
    if (event) cudaEventDestroy(event);  // released once the work and waits that need it are done
  }
};

class CudaGraph final : public StreamGraph {
 public:
  CudaGraph(cudaGraphExec_t exec, cudaStream_t stream) : exec_(exec), stream_(stream) {}
  ~CudaGraph() override { cudaGraphExecDestroy(exec_); }
  Status launch() override { return cuda::cuda_status(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch"); }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
};

class CudaTimer final : public StreamTimer {
 public:
  explicit CudaTimer(cudaStream_t stream) : stream_(stream) {}
  ~CudaTimer() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  Status mark() override {
    if (used_ == events_.size()) {
      cudaEvent_t e = nullptr;
      FT_RETURN_IF_ERROR(cuda::cuda_status(cudaEventCreate(&e), "cudaEventCreate"));
      events_.push_back(e);
    }
    return cuda::cuda_status(cudaEventRecord(events_[used_++], stream_), "cudaEventRecord");
  }
  Result<std::vector<double>> intervals_ms() override {
    std::vector<double> out;
    if (used_ > 0) FT_RETURN_IF_ERROR(cuda::cuda_status(cudaEventSynchronize(events_[used_ - 1]), "cudaEventSynchronize"));
    for (size_t i = 1; i < used_; ++i) {
      float ms = 0.0f;
      FT_RETURN_IF_ERROR(cuda::cuda_status(cudaEventElapsedTime(&ms, events_[i - 1], events_[i]), "cudaEventElapsedTime"));
      out.push_back(ms);
    }
    used_ = 0;
    return out;
  }

 private:
  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;  // reused from call to call
  size_t used_ = 0;
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

  Status check_copy(const Tensor& src, const Tensor& dst) const {
    if (src.dtype != dst.dtype || !same_shape(src, dst) || !src.is_contiguous() || !dst.is_contiguous())
      return invalid_argument("copy: " + src.shape_string() + " -> " + dst.shape_string());
    for (const Tensor* t : {&src, &dst})
      if (!t->device().is_cpu() && t->device() != device_) return unsupported("copy: tensor on another device");
    return ok_status();
  }

  Status copy(const Tensor& src, const Tensor& dst) override {
    FT_RETURN_IF_ERROR(check_copy(src, dst));
    if (src.nbytes() == 0) return ok_status();
    return cuda::cuda_status(cudaMemcpyAsync(dst.data(), src.data(), src.nbytes(), cudaMemcpyDefault, stream_->get()),
                             "cudaMemcpyAsync");
  }

  Result<std::unique_ptr<StreamGraph>> capture(const std::function<Status()>& body) override {
    const cudaStream_t st = stream_->get();
    FT_RETURN_IF_ERROR(cuda::cuda_status(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal),
                                         "cudaStreamBeginCapture"));
    const Status recorded = body();
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(st, &graph);
    if (!recorded.ok() || end != cudaSuccess) {
      if (graph) cudaGraphDestroy(graph);
      FT_RETURN_IF_ERROR(recorded);
      return cuda::cuda_status(end, "cudaStreamEndCapture");
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    FT_RETURN_IF_ERROR(cuda::cuda_status(inst, "cudaGraphInstantiate"));
    auto captured = std::unique_ptr<StreamGraph>(new CudaGraph(exec, st));
    // Uploaded now (in stream order), so that its first launch costs what every later one does.
    FT_RETURN_IF_ERROR(cuda::cuda_status(cudaGraphUpload(exec, st), "cudaGraphUpload"));
    return captured;
  }

  Result<std::unique_ptr<StreamTimer>> timer() override {
    return std::unique_ptr<StreamTimer>(new CudaTimer(stream_->get()));
  }

  Result<std::unique_ptr<Stream>> create_stream() override {
    FT_ASSIGN_OR_RETURN(auto s, cuda::CudaStream::create(device_.index, /*scratch=*/false));
    return std::unique_ptr<Stream>(std::move(s));
  }

  Result<std::unique_ptr<StreamEvent>> record(Stream& s) override { return record_event(s, cudaEventDisableTiming); }
  Result<std::unique_ptr<StreamEvent>> record_timed(Stream& s) override { return record_event(s, cudaEventDefault); }

  Result<double> elapsed_ms(const StreamEvent& from, const StreamEvent& to) override {
    const cudaEvent_t a = static_cast<const CudaEvent&>(from).event, b = static_cast<const CudaEvent&>(to).event;
    FT_RETURN_IF_ERROR(cuda::cuda_status(cudaEventSynchronize(b), "cudaEventSynchronize"));
    float ms = 0.0f;
    FT_RETURN_IF_ERROR(cuda::cuda_status(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime"));
    return static_cast<double>(ms);
  }

  Status wait(Stream& waiter, const StreamEvent& event) override {
    return cuda::cuda_status(
        cudaStreamWaitEvent(cuda::cuda_stream(waiter).get(), static_cast<const CudaEvent&>(event).event, 0),
        "cudaStreamWaitEvent");
  }

  Status copy_on(Stream& s, const Tensor& src, const Tensor& dst) override {
    FT_RETURN_IF_ERROR(check_copy(src, dst));
    if (src.nbytes() == 0) return ok_status();
    return cuda::cuda_status(
        cudaMemcpyAsync(dst.data(), src.data(), src.nbytes(), cudaMemcpyDefault, cuda::cuda_stream(s).get()),
        "cudaMemcpyAsync");
  }

  Status launch_host(Stream& s, void (*fn)(void*), void* data) override {
    return cuda::cuda_status(cudaLaunchHostFunc(cuda::cuda_stream(s).get(), fn, data), "cudaLaunchHostFunc");
  }

  Result<std::shared_ptr<Buffer>> map_host(void* data, size_t bytes) override {
    FT_RETURN_IF_ERROR(cuda::cuda_status(
        cudaHostRegister(data, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable),
        ("cudaHostRegister of " + std::to_string(bytes) + " bytes").c_str()));
    void* device_ptr = nullptr;
    const cudaError_t err = cudaHostGetDevicePointer(&device_ptr, data, 0);
    if (err != cudaSuccess) {
      cudaHostUnregister(data);
      return cuda::cuda_status(err, "cudaHostGetDevicePointer");
    }
    return std::shared_ptr<Buffer>(new MappedHostBuffer(data, device_ptr, bytes, device_));
  }

  Result<MemoryInfo> memory_info() override {
    MemoryInfo m;
    size_t free = 0, total = 0;
    FT_RETURN_IF_ERROR(cuda::cuda_status(cudaMemGetInfo(&free, &total), "cudaMemGetInfo"));
    m.free = free;
    m.total = total;
    return m;
  }

 private:
  // A new event recorded on s (flags: cudaEventDisableTiming for waits only).
  static Result<std::unique_ptr<StreamEvent>> record_event(Stream& s, unsigned flags) {
    auto e = std::make_unique<CudaEvent>();
    FT_RETURN_IF_ERROR(cuda::cuda_status(cudaEventCreateWithFlags(&e->event, flags), "cudaEventCreate"));
    FT_RETURN_IF_ERROR(cuda::cuda_status(cudaEventRecord(e->event, cuda::cuda_stream(s).get()), "cudaEventRecord"));
    return std::unique_ptr<StreamEvent>(std::move(e));
  }

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
