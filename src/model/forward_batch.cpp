// ForwardBatch assembly: one sequence's tokens and cache coordinates at a time.
#include "model/forward_batch.h"

#include <algorithm>

namespace ft {

void ForwardBatch::add_sequence(std::span<const int32_t> next_tokens, const SequenceKv& seq, int32_t page_size) {
  if (q_start.empty()) q_start.push_back(0);
  const int32_t start = seq.n_tokens(), n = static_cast<int32_t>(next_tokens.size());
  for (int32_t i = 0; i < n; ++i) {
    tokens.push_back(next_tokens[static_cast<size_t>(i)]);
    positions.push_back(start + i);
    slots.push_back(seq.slot(start + i, page_size));
  }
  q_start.push_back(n_tokens());
  kv_len.push_back(start + n);
  if (seq.state_slot() >= 0) state_slots.push_back(seq.state_slot());

  const int32_t rows = n_seq() - 1;  // rows already in the table
  const int32_t width = std::max(max_pages, static_cast<int32_t>(seq.pages().size()));
  if (width > max_pages && rows > 0) {  // widen the existing rows, padding with page 0
    std::vector<int32_t> wider(static_cast<size_t>(rows) * static_cast<size_t>(width), 0);
    for (int32_t r = 0; r < rows; ++r)
      std::copy_n(page_table.begin() + static_cast<long>(r) * max_pages, max_pages,
                  wider.begin() + static_cast<long>(r) * width);
    page_table = std::move(wider);
  }
  max_pages = width;
  page_table.resize(static_cast<size_t>(rows + 1) * static_cast<size_t>(width), 0);
  std::copy(seq.pages().begin(), seq.pages().end(), page_table.begin() + static_cast<long>(rows) * width);
}

}  // namespace ft
