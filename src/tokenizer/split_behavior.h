// HF SplitDelimiterBehavior: how the matches of a pattern cut a piece (Removed, Isolated, ...).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "freetoken/status.h"

namespace ft::tok {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Result<SplitBehavior> parse_split_behavior(const std::string& name);

// A span of a piece and whether the pattern matched it.
struct Span {
  size_t begin, end;
  bool is_match;
};

// Spans covering the piece -> the spans that become pieces, as tokenizers' NormalizedString::split.
std::vector<Span> apply_split_behavior(const std::vector<Span>& spans, SplitBehavior behavior);

}  // namespace ft::tok
