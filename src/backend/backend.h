// Backend: a device with its op table, allocator, streams and copies. Chosen by name at run time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/ops.h"
#include "core/buffer.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace ft {

// An ordered queue of work on one device. Ops enqueue; synchronize() waits for all of it.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual Device device() const = 0;
  virtual Status synchronize() = 0;
};

// Host work runs synchronously on the caller's thread and, for data-parallel loops, a thread pool.
class HostStream final : public Stream {
 public:
  explicit HostStream(ThreadPool* pool) : pool_(pool) {}
  Device device() const override { return kCpuDevice; }
  Status synchronize() override { return ok_status(); }
  ThreadPool* pool() const { return pool_; }

 private:
  ThreadPool* pool_;
};

// A recorded sequence of stream work (a CUDA graph) that replays with the addresses it was recorded with.
class StreamGraph {
 public:
  virtual ~StreamGraph() = default;
  virtual Status launch() = 0;  // enqueues one replay on the backend's stream
};

// A point in a stream's work (a CUDA event).
class StreamEvent {
 public:
  virtual ~StreamEvent() = default;
};

// Timing marks on a backend's stream (CUDA events), for benchmarks.
class StreamTimer {
 public:
  virtual ~StreamTimer() = default;
  virtual Status mark() = 0;  // records a point after the work enqueued so far
  // Waits for the stream, returns the milliseconds between consecutive marks and forgets them.
  virtual Result<std::vector<double>> intervals_ms() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual Device device() const = 0;
  virtual const OpTable& ops() const = 0;
  virtual Stream& stream() = 0;
  // Device memory, zero-filled.
  virtual Result<std::shared_ptr<Buffer>> allocate(size_t bytes) = 0;
  // Copies between host and device or within one (same dtype and shape, both contiguous), on stream().
  virtual Status copy(const Tensor& src, const Tensor& dst) = 0;
  // A contiguous tensor in this backend's memory.
  Result<Tensor> empty(DType dtype, std::initializer_list<int64_t> shape);
  // Records the stream work `body` enqueues (no host syncs or copies from pageable memory inside) into a
  // replayable graph. kUnsupported where the device has no graphs (host backends).
  virtual Result<std::unique_ptr<StreamGraph>> capture(const std::function<Status()>& body);
  // A timer over stream(); kUnsupported on host backends.
  virtual Result<std::unique_ptr<StreamTimer>> timer();

  // Further queues, for copies and host callbacks that overlap stream(). Ops may run on them too (on CUDA without
  // the cuBLASLt and attention scratch, so not matmul or attention).
  virtual Result<std::unique_ptr<Stream>> create_stream() = 0;
  // A point on s after the work enqueued so far; wait() makes another stream wait for it (both capturable).
  virtual Result<std::unique_ptr<StreamEvent>> record(Stream& s) = 0;
  virtual Status wait(Stream& waiter, const StreamEvent& event) = 0;
  // record() with a timestamp, and the milliseconds between two such events of one stream (waits for `to`; not
  // for events recorded during a capture).
  virtual Result<std::unique_ptr<StreamEvent>> record_timed(Stream& s) = 0;
  virtual Result<double> elapsed_ms(const StreamEvent& from, const StreamEvent& to) = 0;
  // copy() on another of this backend's streams.
  virtual Status copy_on(Stream& s, const Tensor& src, const Tensor& dst) = 0;
  // Enqueues fn(data) on s: it runs on a host thread once the work before it is done, and the work after it waits
  // for it (capturable; fn must not call the device API). Host backends call it at once.
  virtual Status launch_host(Stream& s, void (*fn)(void*), void* data) = 0;
  // Host memory [data, data + bytes) page-locked and addressable by the device: the returned buffer is that memory
  // as this device sees it (the pin lasts as long as the buffer). Host backends: the memory itself.
  virtual Result<std::shared_ptr<Buffer>> map_host(void* data, size_t bytes) = 0;
  struct MemoryInfo {
    uint64_t free = 0, total = 0;
  };
  // The device's free and total memory now (host backends: MemAvailable and MemTotal).
  virtual Result<MemoryInfo> memory_info() = 0;
};

struct BackendOptions {
  int n_threads = 0;  // host threads, 0 = one per core
  bool pin_threads = false;  // host backends: bind each worker thread to a core (see ThreadPool)
  int device_index = 0;
};

// "ref", "cpu" or "cuda".
Result<std::unique_ptr<Backend>> create_backend(std::string_view name, const BackendOptions& options = {});

}  // namespace ft
