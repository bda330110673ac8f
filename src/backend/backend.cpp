// Backend construction by name, and the host backends (ref, cpu) that share host memory and a thread pool.
#include "backend/backend.h"

#include <chrono>
#include <cstring>
#include <fstream>

#include "backend/cpu/cpu_ops.h"
#include "backend/ref/ref_ops.h"

#ifdef FT_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace ft {

Result<Tensor> Backend::empty(DType dtype, std::initializer_list<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  FT_ASSIGN_OR_RETURN(auto buf, allocate(dtype_bytes(dtype, static_cast<size_t>(n))));
  return Tensor::make(dtype, shape, std::move(buf));
}

Result<std::unique_ptr<StreamGraph>> Backend::capture(const std::function<Status()>&) {
  return unsupported(std::string(name()) + " backend has no stream graphs");
}

Result<std::unique_ptr<StreamTimer>> Backend::timer() {
  return unsupported(std::string(name()) + " backend has no stream timer");
}

namespace {

Backend::MemoryInfo host_memory_info() {
  Backend::MemoryInfo m;
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t kb = 0;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") m.free = kb * 1024;
    if (key == "MemTotal:") m.total = kb * 1024;
  }
  return m;
}

struct HostEvent final : StreamEvent {
  std::chrono::steady_clock::time_point at = std::chrono::steady_clock::now();
};

class HostBackend final : public Backend {
 public:
  HostBackend(const char* name, const OpTable& ops, int n_threads, bool pin_threads)
      : name_(name), ops_(ops), pool_(n_threads, pin_threads), stream_(&pool_) {}
  const char* name() const override { return name_; }
  Device device() const override { return kCpuDevice; }
  const OpTable& ops() const override { return ops_; }
  Stream& stream() override { return stream_; }
  Result<std::shared_ptr<Buffer>> allocate(size_t bytes) override { return allocate_host(bytes); }
  Status copy(const Tensor& src, const Tensor& dst) override {
    if (!src.device().is_cpu() || !dst.device().is_cpu()) return unsupported("host backend copies host memory only");
    if (src.dtype != dst.dtype || !same_shape(src, dst) || !src.is_contiguous() || !dst.is_contiguous())
      return invalid_argument("copy: " + src.shape_string() + " -> " + dst.shape_string());
    std::memcpy(dst.data(), src.data(), src.nbytes());
    return ok_status();
  }
  Result<std::unique_ptr<Stream>> create_stream() override { return std::unique_ptr<Stream>(new HostStream(&pool_)); }
  // Host work is done when it is enqueued: nothing to wait for.
  Result<std::unique_ptr<StreamEvent>> record(Stream&) override { return std::make_unique<StreamEvent>(); }
  Status wait(Stream&, const StreamEvent&) override { return ok_status(); }
  Result<std::unique_ptr<StreamEvent>> record_timed(Stream&) override {
    return std::unique_ptr<StreamEvent>(std::make_unique<HostEvent>());
  }
  Result<double> elapsed_ms(const StreamEvent& from, const StreamEvent& to) override {
    return std::chrono::duration<double, std::milli>(static_cast<const HostEvent&>(to).at -
                                                     static_cast<const HostEvent&>(from).at)
        .count();
  }
  Status copy_on(Stream&, const Tensor& src, const Tensor& dst) override { return copy(src, dst); }
  Status launch_host(Stream&, void (*fn)(void*), void* data) override {
    fn(data);
    return ok_status();
  }
  Result<std::shared_ptr<Buffer>> map_host(void* data, size_t bytes) override { return wrap_host(data, bytes, nullptr); }
  Result<MemoryInfo> memory_info() override { return host_memory_info(); }

 private:
  const char* name_;
  const OpTable& ops_;
  ThreadPool pool_;
  HostStream stream_;
};

}  // namespace

Result<std::unique_ptr<Backend>> create_backend(std::string_view name, const BackendOptions& options) {
  if (name == "ref") return std::unique_ptr<Backend>(new HostBackend("ref", ref_op_table(), 1, false));
  if (name == "cpu") return std::unique_ptr<Backend>(new HostBackend("cpu", cpu_op_table(), options.n_threads, options.pin_threads));
  if (name == "cuda") {
#ifdef FT_HAVE_CUDA
    return create_cuda_backend(options);
#else
    return unsupported("this ft was built without CUDA (configure with the cuda preset)");
#endif
  }
  return invalid_argument("unknown device '" + std::string(name) + "' (ref, cpu or cuda)");
}

}  // namespace ft
