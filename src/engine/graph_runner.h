// GraphRunner: decode-only steps replayed as one captured stream graph (a CUDA graph) per padded batch size and key
// capacity.
//
// Batch sizes 1, 2, 4, 8, ... up to the model's max_seqs (which is the last size) are captured on first use, each at
// the key capacities (Model::staged_key_capacity: powers of two of pages) its steps stage. A step
// of n sequences runs the graph of the next size up; the padding sequences decode token 0 at position 0 into a
// scratch page the runner holds for its lifetime, and their logit rows (after the real ones) are to be ignored.
// Models with recurrent state are not accepted (their padding would need a scratch state slot too).
#pragma once

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "model/model.h"

namespace ft {

class GraphRunner {
 public:
  // kUnsupported on host backends and for models with recurrent state. Takes one page of `kv`'s pool.
  static Result<std::unique_ptr<GraphRunner>> create(Model& model, Backend& backend, KvCache& kv);
  ~GraphRunner();
  GraphRunner(const GraphRunner&) = delete;
  GraphRunner& operator=(const GraphRunner&) = delete;

  // True for a step of one token per sequence whose logit rows are its tokens in order.
  bool accepts(const ForwardBatch& batch) const;
  // The captured batch size a step of n sequences runs at.
  int32_t padded_size(int32_t n_seq) const;
  // Pads and stages the step, captures the graph of its size and key capacity on first use and replays it; does not
  // wait. Logits [padded_size, vocab] f32 land in `logits`, which must be the same tensor on every call (graphs keep
  // its address); row i < n_seq is sequence i's.
  Status run(const ForwardBatch& batch, const Tensor& logits);
  // Graphs captured so far (a step that captured is no measure of the step's speed).
  uint64_t captures() const { return captures_; }

 private:
  GraphRunner(Model& model, Backend& backend, KvCache& kv, int32_t scratch_page)
      : model_(model), backend_(backend), kv_(kv), scratch_page_(scratch_page) {}
  void pad(const ForwardBatch& batch, int32_t size);

  Model& model_;
  Backend& backend_;
  KvCache& kv_;
  int32_t scratch_page_;
  std::map<std::pair<int32_t, int64_t>, std::unique_ptr<StreamGraph>> graphs_;  // by padded batch size, key capacity
  const void* logits_data_ = nullptr;                                           // the logits every graph writes
  uint64_t epoch_ = 0;  // the model's graph_epoch() they were captured in
  uint64_t captures_ = 0;
  ForwardBatch padded_;
};

}  // namespace ft
