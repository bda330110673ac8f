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

size_t align16(size_t n) { return (n + 15) / 16 * 16; }

}  // namespace

ExpertShape::Layout ExpertShape::layout() const {
  const auto elements = [](DType t, int64_t n) { return dtype_bytes(t, static_cast<size_t>(n)); };
  Layout l{};
  l.down = elements(dtype, 2 * inter * d);
  l.gate_up_scales = l.down + elements(dtype, d * inter);
  l.down_scales = l.gate_up_scales;
  l.gate_up_bias = l.down_scales;
  DType bias = dtype;
  if (dtype == DType::kF4E2M1) {
    l.down_scales = l.gate_up_scales + elements(DType::kUE8M0, 2 * inter * d / 32);
    l.gate_up_bias = align16(l.down_scales + elements(DType::kUE8M0, d * inter / 32));
    bias = bias_dtype;
  }
  l.down_bias = l.gate_up_bias + (biases ? elements(bias, 2 * inter) : 0);
  l.end = l.down_bias + (biases ? elements(bias, d) : 0);
  return l;
}

Result<std::unique_ptr<ExpertStore>> ExpertStore::create(const ExpertShape& s) {
  if (s.n_layers <= 0 || s.n_expert <= 0 || s.d <= 0 || s.inter <= 0) return invalid_argument("expert store: empty shape");
  if (s.dtype == DType::kF4E2M1 && (s.d % 32 != 0 || s.inter % 32 != 0))
    return invalid_argument("expert store: MXFP4 experts need d and inter in groups of 32");
  const size_t record = (s.layout().end + kRecordAlign - 1) / kRecordAlign * kRecordAlign;
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

Tensor ExpertStore::view(const Tensor& recs, int64_t first, int64_t n, DType dtype, size_t offset, int64_t rows,
                         int64_t cols) const {
  Tensor t;
  t.dtype = dtype;
  t.buffer = recs.buffer;
  t.offset = recs.offset + record_bytes_ * static_cast<size_t>(first) + offset;
  t.ndim = 3;
  t.shape = {n, rows, cols, 1};
  t.stride = {static_cast<int64_t>(record_bytes_ * 8 / dtype_bits(dtype)), cols, 1, 1};
  return t;
}

Tensor ExpertStore::gate_up_view(const Tensor& recs, int64_t first, int64_t n) const {
  return view(recs, first, n < 0 ? shape_.n_expert : n, shape_.dtype, 0, 2 * shape_.inter, shape_.d);
}

Tensor ExpertStore::down_view(const Tensor& recs, int64_t first, int64_t n) const {
  return view(recs, first, n < 0 ? shape_.n_expert : n, shape_.dtype, shape_.layout().down, shape_.d, shape_.inter);
}

MoeExpertParams ExpertStore::params_view(const Tensor& recs, int64_t first, int64_t n) const {
  MoeExpertParams p;
  p.act = shape_.act;
  const int64_t count = n < 0 ? shape_.n_expert : n, d = shape_.d, inter = shape_.inter;
  const ExpertShape::Layout l = shape_.layout();
  const bool mxfp4 = shape_.dtype == DType::kF4E2M1;
  if (mxfp4) {
    p.gate_up_scales = view(recs, first, count, DType::kUE8M0, l.gate_up_scales, 2 * inter, d / 32);
    p.down_scales = view(recs, first, count, DType::kUE8M0, l.down_scales, d, inter / 32);
    p.gate_up_interleaved = true;  // as the checkpoint stores them
  }
  if (!shape_.biases) return p;
  const DType bias = mxfp4 ? shape_.bias_dtype : shape_.dtype;
  p.gate_up_bias = view(recs, first, count, bias, l.gate_up_bias, 1, 2 * inter).select(1, 0);  // [n, 2 inter]
  p.down_bias = view(recs, first, count, bias, l.down_bias, 1, d).select(1, 0);                // [n, d]
  return p;
}

Status ExpertStore::pin(Backend& backend) {
  if (device_records_.defined()) return ok_status();
  FT_ASSIGN_OR_RETURN(auto mapped, backend.map_host(host_->data(), host_->size()));
  device_records_ = Tensor::make(DType::kU8, {n_keys(), static_cast<int64_t>(record_bytes_)}, std::move(mapped));
  return ok_status();
}

}  // namespace ft
