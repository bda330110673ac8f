// ExpertStore: every routed expert of every MoE layer in host RAM, one aligned record per expert so that a miss
// is one copy: gate rows then up rows (the fused gate_up [2 inter, d]), then down [d, inter], then, for experts with
// biases, gate_up's [2 inter] and down's [d], all in the weight dtype. MXFP4 experts (f4_e2m1) are kept as the
// checkpoint stores them: gate and up rows alternating, then down, then their ue8m0 scales (a group of 32 along each
// row), then the biases in their own dtype.
// Records are layer-major (key = moe_layer * n_expert + expert), so one layer's experts are one contiguous range.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace ft {

struct ExpertShape {
  int64_t n_layers = 0;  // MoE layers
  int64_t n_expert = 0;
  int64_t d = 0;      // hidden size
  int64_t inter = 0;  // expert intermediate size
  DType dtype = DType::kBF16;
  bool biases = false;
  ExpertActivation act;
  DType bias_dtype = DType::kBF16;  // MXFP4 experts' biases; other experts' are in dtype

  struct Layout {  // byte offsets of a record's parts (the scales' are the down weights' end but for MXFP4)
    size_t gate_up, down, gate_up_scales, down_scales, gate_up_bias, down_bias, end;
  };
  Layout layout() const;
  size_t weight_bytes() const { return layout().gate_up_bias; }  // what a token's expert reads but its biases
};

class ExpertStore {
 public:
  static constexpr size_t kRecordAlign = 256;

  // Host memory for every record, not yet filled (page-aligned, not zeroed).
  static Result<std::unique_ptr<ExpertStore>> create(const ExpertShape& shape);

  const ExpertShape& shape() const { return shape_; }
  int64_t n_keys() const { return shape_.n_layers * shape_.n_expert; }
  size_t record_bytes() const { return record_bytes_; }
  size_t bytes() const { return record_bytes_ * static_cast<size_t>(n_keys()); }
  void* record(int64_t layer, int64_t expert) const;

  // Views of records, host memory: [n_keys, R] u8, and one layer's [n_expert, 2 inter, d] / [n_expert, d, inter]
  // weights with the record as expert stride.
  Tensor records() const { return records_; }
  Tensor gate_up(int64_t layer) const { return gate_up_view(records_, layer * shape_.n_expert); }
  Tensor down(int64_t layer) const { return down_view(records_, layer * shape_.n_expert); }
  // The same views over any [n, R] u8 array of records (a device pool of slots, a streaming buffer): rows
  // [first, first + n) as experts.
  Tensor gate_up_view(const Tensor& recs, int64_t first_record, int64_t n = -1) const;
  Tensor down_view(const Tensor& recs, int64_t first_record, int64_t n = -1) const;
  // moe_experts' parameters for those experts: the activation, and views of the biases where the experts have them.
  MoeExpertParams params_view(const Tensor& recs, int64_t first_record, int64_t n = -1) const;
  MoeExpertParams params(int64_t layer) const { return params_view(records_, layer * shape_.n_expert); }

  // Page-locks the records and maps them for `backend` (once): device_records() is then [n_keys, R] u8 that the
  // device reads over PCIe.
  Status pin(Backend& backend);
  const Tensor& device_records() const { return device_records_; }

 private:
  ExpertStore(const ExpertShape& shape, size_t record_bytes, std::shared_ptr<Buffer> host);
  // [n, rows, cols] of `dtype` at byte `offset` of each record
  Tensor view(const Tensor& recs, int64_t first, int64_t n, DType dtype, size_t offset, int64_t rows,
              int64_t cols) const;

  ExpertShape shape_;
  size_t record_bytes_;
  std::shared_ptr<Buffer> host_;
  Tensor records_;
  Tensor device_records_;
};

}  // namespace ft
