// ExpertStore: anonymous page-aligned host memory carved into expert records; pinned on request.
#include "moe/expert_store.h"

#include <sys/mman.h>

namespace ft {
namespace {

class AnonymousMemory final : public Buffer {
 public:
  AnonymousMemory(void* data, size_t size) : Buffer(data, size, kCpuDevice) {}
  ~AnonymousMemory() override { munmap(data_, size_); }
};

}  // namespace

Result<std::unique_ptr<ExpertStore>> ExpertStore::create(const ExpertShape& s) {
  if (s.n_layers <= 0 || s.n_expert <= 0 || s.d <= 0 || s.inter <= 0) return invalid_argument("expert store: empty shape");
  const size_t weights = dtype_bytes(s.dtype, static_cast<size_t>(s.record_elements()));
  const size_t record = (weights + kRecordAlign - 1) / kRecordAlign * kRecordAlign;
  const size_t bytes = record * static_cast<size_t>(s.n_layers * s.n_expert);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return out_of_memory("expert store: cannot map " + std::to_string(bytes >> 20) + " MiB of host memory");
  madvise(p, bytes, MADV_HUGEPAGE);
  return std::unique_ptr<ExpertStore>(new ExpertStore(s, record, std::make_shared<AnonymousMemory>(p, bytes)));
}

ExpertStore::ExpertStore(const ExpertShape& shape, size_t record_bytes, std::shared_ptr<Buffer> host)
    : shape_(shape), record_bytes_(record_bytes), host_(std::move(host)) {
  records_ = Tensor::make(DType::kU8, {n_keys(), static_cast<int64_t>(record_bytes_)}, host_);
}

void* ExpertStore::record(int64_t layer, int64_t expert) const {
  return static_cast<char*>(host_->data()) + record_bytes_ * static_cast<size_t>(layer * shape_.n_expert + expert);
}

Tensor ExpertStore::view(const Tensor& recs, int64_t first, int64_t n, int64_t part_offset, int64_t rows,
                         int64_t cols) const {
  const size_t elem = dtype_bytes(shape_.dtype, 1);
  Tensor t;
  t.dtype = shape_.dtype;
  t.buffer = recs.buffer;
  t.offset = recs.offset + record_bytes_ * static_cast<size_t>(first) + elem * static_cast<size_t>(part_offset);
  t.ndim = 3;
  t.shape = {n, rows, cols, 1};
  t.stride = {static_cast<int64_t>(record_bytes_ / elem), cols, 1, 1};
  return t;
}

Tensor ExpertStore::gate_up_view(const Tensor& recs, int64_t first, int64_t n) const {
  return view(recs, first, n < 0 ? shape_.n_expert : n, 0, 2 * shape_.inter, shape_.d);
}

Tensor ExpertStore::down_view(const Tensor& recs, int64_t first, int64_t n) const {
  return view(recs, first, n < 0 ? shape_.n_expert : n, 2 * shape_.inter * shape_.d, shape_.d, shape_.inter);
}

Tensor ExpertStore::bias_view(const Tensor& recs, int64_t first, int64_t n, int64_t part_offset, int64_t len) const {
  return view(recs, first, n, part_offset, 1, len).select(1, 0);  // [n, len]
}

MoeExpertParams ExpertStore::params_view(const Tensor& recs, int64_t first, int64_t n) const {
  MoeExpertParams p;
  p.act = shape_.act;
  if (!shape_.biases) return p;
  const int64_t count = n < 0 ? shape_.n_expert : n, weights = 3 * shape_.inter * shape_.d;
  p.gate_up_bias = bias_view(recs, first, count, weights, 2 * shape_.inter);
  p.down_bias = bias_view(recs, first, count, weights + 2 * shape_.inter, shape_.d);
  return p;
}

Status ExpertStore::pin(Backend& backend) {
  if (device_records_.defined()) return ok_status();
  FT_ASSIGN_OR_RETURN(auto mapped, backend.map_host(host_->data(), host_->size()));
  device_records_ = Tensor::make(DType::kU8, {n_keys(), static_cast<int64_t>(record_bytes_)}, std::move(mapped));
  return ok_status();
}

}  // namespace ft
