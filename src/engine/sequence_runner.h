// SequenceRunner: drives one sequence through a model — chunked prefill, then one token per step.
// (The multi-request scheduler builds its batches the same way; this is its single-sequence form.)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/model.h"

namespace ft {

class SequenceRunner {
 public:
  // `logits` must be a backend tensor [>= model max_tokens, vocab] f32.
  SequenceRunner(Model& model, Backend& backend, KvCache& kv);
  ~SequenceRunner();

  // Feeds tokens, at most `chunk` per step. Appends the logits of every fed position to `all` when
  // given ([n, vocab] row-major), and leaves the last position's in `last`.
  Status feed(std::span<const int32_t> tokens, int32_t chunk, std::vector<float>* all, std::vector<float>& last);
  int32_t n_tokens() const { return seq_.n_tokens(); }

 private:
  Status step(std::span<const int32_t> tokens, bool all_rows, std::vector<float>* all, std::vector<float>& last);

  Model& model_;
  Backend& backend_;
  KvCache& kv_;
  SequenceKv seq_;
  Tensor logits_;  // [max_tokens, vocab] f32
  std::vector<float> host_logits_;
};

}  // namespace ft
