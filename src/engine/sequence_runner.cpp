// SequenceRunner implementation.
#include "engine/sequence_runner.h"

#include <algorithm>

#include "core/check.h"

namespace ft {

SequenceRunner::SequenceRunner(Model& model, Backend& backend, KvCache& kv)
    : model_(model), backend_(backend), kv_(kv) {}

SequenceRunner::~SequenceRunner() { seq_.release(kv_); }

Status SequenceRunner::feed(std::span<const int32_t> tokens, int32_t chunk, std::vector<float>* all,
                            std::vector<float>& last) {
  if (tokens.empty()) return invalid_argument("no tokens to feed");
  chunk = std::min(chunk <= 0 ? model_.options().max_tokens : chunk, model_.options().max_tokens);
  for (size_t at = 0; at < tokens.size(); at += static_cast<size_t>(chunk)) {
    const size_t n = std::min(tokens.size() - at, static_cast<size_t>(chunk));
    FT_RETURN_IF_ERROR(step(tokens.subspan(at, n), all != nullptr, all, last));
  }
  return ok_status();
}

Status SequenceRunner::step(std::span<const int32_t> tokens, bool all_rows, std::vector<float>* all,
                            std::vector<float>& last) {
  const int32_t n = static_cast<int32_t>(tokens.size()), page_size = kv_.page_size();
  const int64_t vocab = model_.config().vocab_size;
  if (!logits_.defined()) {
    FT_ASSIGN_OR_RETURN(logits_, backend_.empty(DType::kF32, {model_.options().max_tokens, vocab}));
  }
  const int32_t start = seq_.n_tokens();
  if (start + n > model_.options().max_pages_per_seq * page_size)
    return invalid_argument("sequence of " + std::to_string(start + n) + " tokens exceeds the context");
  FT_RETURN_IF_ERROR(seq_.reserve(kv_.pool(), page_size, n));
  FT_RETURN_IF_ERROR(seq_.acquire_state(kv_.states()));

  ForwardBatch b;
  b.add_sequence(tokens, seq_, page_size);
  if (all_rows)
    for (int32_t i = 0; i < n; ++i) b.logit_rows.push_back(i);
  else
    b.logit_rows.push_back(n - 1);
  FT_RETURN_IF_ERROR(model_.forward(b, kv_, logits_));
  seq_.advance(n);

  const int64_t r = static_cast<int64_t>(b.logit_rows.size());
  host_logits_.resize(static_cast<size_t>(r * vocab));
  Tensor host = Tensor::make(DType::kF32, {r, vocab}, wrap_host(host_logits_.data(), host_logits_.size() * 4, nullptr));
  FT_RETURN_IF_ERROR(backend_.copy(logits_.slice(0, 0, r), host));
  FT_RETURN_IF_ERROR(backend_.stream().synchronize());
  if (all) all->insert(all->end(), host_logits_.begin(), host_logits_.end());
  last.assign(host_logits_.end() - vocab, host_logits_.end());
  return ok_status();
}

}  // namespace ft
