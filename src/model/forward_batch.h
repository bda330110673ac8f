// ForwardBatch: the tokens of one model step (prefill chunks and decode tokens of several sequences).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_cache.h"

namespace ft {

struct ForwardBatch {
  std::vector<int32_t> tokens;      // [n_tokens] token ids, sequence after sequence
  std::vector<int32_t> positions;   // [n_tokens] position of each token in its sequence
  std::vector<int32_t> slots;       // [n_tokens] KV slot (page * page_size + row) of each token
  std::vector<int32_t> q_start;     // [n_seq + 1] first token of each sequence; back() == n_tokens
  std::vector<int32_t> kv_len;      // [n_seq] tokens cached per sequence once this step's are stored
  std::vector<int32_t> state_slots; // [n_seq] recurrent-state slot per sequence (empty: the model keeps none)
  std::vector<int32_t> page_table;  // [n_seq, max_pages] pages of each sequence, row-major, padded with 0
  int32_t max_pages = 0;            // columns of page_table
  std::vector<int32_t> logit_rows;  // [n_logits] tokens whose next-token logits are wanted

  int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t n_seq() const { return static_cast<int32_t>(kv_len.size()); }

  // Appends the next tokens of a sequence whose first seq.n_tokens() tokens are cached and whose pages for
  // these ones are reserved: tokens, positions, KV slots, query range, KV length, state slot and page-table
  // row (the table widens to the longest page list). Logit rows are the caller's choice.
  void add_sequence(std::span<const int32_t> next_tokens, const SequenceKv& seq, int32_t page_size);
};

}  // namespace ft
