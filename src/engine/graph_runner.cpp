// GraphRunner: padding a decode step to a captured size, capture on first use, replay.
#include "engine/graph_runner.h"

#include <algorithm>

namespace ft {

Result<std::unique_ptr<GraphRunner>> GraphRunner::create(Model& model, Backend& backend, KvCache& kv) {
  if (backend.device().is_cpu()) return unsupported("stream graphs need a device backend");
  if (!model.state_layers().empty())
    return unsupported("stream graphs of models with recurrent state");
  FT_ASSIGN_OR_RETURN(int32_t page, kv.pool().allocate());
  return std::unique_ptr<GraphRunner>(new GraphRunner(model, backend, kv, page));
}

GraphRunner::~GraphRunner() { kv_.pool().release(scratch_page_); }

bool GraphRunner::accepts(const ForwardBatch& b) const {
  const int32_t n = b.n_seq();
  if (n < 1 || n > model_.options().max_seqs || b.n_tokens() != n || !b.state_slots.empty() ||
      b.logit_rows.size() != static_cast<size_t>(n))
    return false;
  for (int32_t i = 0; i < n; ++i)
    if (b.q_start[static_cast<size_t>(i)] != i || b.logit_rows[static_cast<size_t>(i)] != i) return false;
  return true;
}

int32_t GraphRunner::padded_size(int32_t n_seq) const {
  int32_t size = 1;
  while (size < n_seq) size *= 2;
  return std::min(size, model_.options().max_seqs);
}

void GraphRunner::pad(const ForwardBatch& b, int32_t size) {
  padded_ = b;
  const int32_t ps = kv_.page_size();
  for (int32_t i = b.n_seq(); i < size; ++i) {
    padded_.tokens.push_back(0);
    padded_.positions.push_back(0);
    padded_.slots.push_back(scratch_page_ * ps);
    padded_.q_start.push_back(i + 1);
    padded_.kv_len.push_back(1);
    padded_.logit_rows.push_back(i);
    padded_.page_table.push_back(scratch_page_);
    padded_.page_table.insert(padded_.page_table.end(), static_cast<size_t>(b.max_pages - 1), 0);
  }
}

Status GraphRunner::run(const ForwardBatch& batch, const Tensor& logits) {
  if (!accepts(batch)) return invalid_argument("GraphRunner::run: not a decode-only step");
  if (logits_data_ && logits_data_ != logits.data())
    return invalid_argument("GraphRunner::run: graphs were captured with another logits tensor");
  logits_data_ = logits.data();
  if (model_.graph_epoch() != epoch_) {  // the model's step changed shape: recapture
    graphs_.clear();
    epoch_ = model_.graph_epoch();
  }
  const int32_t size = padded_size(batch.n_seq());
  pad(batch, size);
  FT_RETURN_IF_ERROR(model_.stage(padded_, kv_));
  const std::pair key{size, model_.staged_key_capacity()};
  auto& graph = graphs_[key];
  if (!graph) {
    auto captured = backend_.capture([&] { return model_.run_staged(kv_, logits); });
    if (!captured.ok()) {
      graphs_.erase(key);
      return captured.status();
    }
    graph = std::move(captured).value();
    ++captures_;
  }
  return graph->launch();
}

}  // namespace ft
