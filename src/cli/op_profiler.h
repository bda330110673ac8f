// ProfilingBackend: forwards to another backend and, while profiling, marks the stream before every op so
// that each op's share of a step can be read back (CUDA events: launch gaps count to the op they precede).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"

namespace ft::cli {

class ProfilingBackend final : public Backend {
 public:
  explicit ProfilingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  ~ProfilingBackend() override;
  const char* name() const override { return inner_->name(); }
  Device device() const override { return inner_->device(); }
  const OpTable& ops() const override;
  Stream& stream() override { return inner_->stream(); }
  Result<std::shared_ptr<Buffer>> allocate(size_t bytes) override { return inner_->allocate(bytes); }
  Status copy(const Tensor& src, const Tensor& dst) override { return inner_->copy(src, dst); }
  Result<std::unique_ptr<StreamGraph>> capture(const std::function<Status()>& body) override {
    return inner_->capture(body);
  }
  Result<std::unique_ptr<StreamTimer>> timer() override { return inner_->timer(); }
  Result<std::unique_ptr<Stream>> create_stream() override { return inner_->create_stream(); }
  Result<std::unique_ptr<StreamEvent>> record(Stream& s) override { return inner_->record(s); }
  Status wait(Stream& waiter, const StreamEvent& e) override { return inner_->wait(waiter, e); }
  Result<std::unique_ptr<StreamEvent>> record_timed(Stream& s) override { return inner_->record_timed(s); }
  Result<double> elapsed_ms(const StreamEvent& from, const StreamEvent& to) override {
    return inner_->elapsed_ms(from, to);
  }
  Status copy_on(Stream& s, const Tensor& src, const Tensor& dst) override { return inner_->copy_on(s, src, dst); }
  Status launch_host(Stream& s, void (*fn)(void*), void* data) override { return inner_->launch_host(s, fn, data); }
  Result<std::shared_ptr<Buffer>> map_host(void* data, size_t bytes) override { return inner_->map_host(data, bytes); }
  Result<MemoryInfo> memory_info() override { return inner_->memory_info(); }

  // Starts timing ops (one profiler at a time per process).
  Status start();
  // Marks the end; returns (label, ms) per op in call order since start().
  Result<std::vector<std::pair<std::string, double>>> stop();
  // Called by the op wrappers.
  const OpTable& inner_ops() const { return inner_->ops(); }
  Status before(std::string label);

 private:
  std::unique_ptr<Backend> inner_;
  std::unique_ptr<StreamTimer> timer_;
  std::vector<std::string> labels_;
  OpTable table_{};  // the wrapping table while profiling
  bool active_ = false;
};

}  // namespace ft::cli
