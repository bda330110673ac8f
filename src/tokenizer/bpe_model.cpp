// BPE: characters -> ids (byte fallback, unk), then lowest-rank-first merges through a min-heap.
#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "tokenizer/utf8.h"

namespace ft::tok {
namespace {

constexpr uint32_t kSmallChars = 0x10000;
constexpr size_t kCacheMaxWordBytes = 256;
constexpr size_t kCacheMaxEntries = 1 << 17;

// A merge candidate; the heap pops the lowest rank, then the leftmost position.
struct Candidate {
  int32_t rank;
  int32_t pos;
  int32_t new_id;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

struct Symbol {
  int32_t id;
  int32_t prev, next;
  bool alive;
};

std::string optional_string(const nlohmann::json& spec, const char* key) {
  const auto it = spec.find(key);
  return it == spec.end() || it->is_null() ? std::string() : it->get<std::string>();
}

}  // namespace

Result<std::unique_ptr<BpeModel>> BpeModel::load(const nlohmann::json& spec) {
  const std::string type = spec.value("type", "BPE");
  if (type != "BPE") return unsupported("unsupported model type '" + type + "' (only BPE is implemented)");
  if (spec.contains("dropout") && !spec["dropout"].is_null() && spec["dropout"].get<double>() != 0.0)
    return unsupported("BPE model: dropout is not supported");
  std::unique_ptr<BpeModel> m(new BpeModel());
  int32_t max_id = -1;
  for (const auto& [token, id] : spec.at("vocab").items()) {
    const auto v = id.get<int32_t>();
    m->vocab_.emplace(token, v);
    max_id = std::max(max_id, v);
  }
  m->id_to_token_.resize(static_cast<size_t>(max_id + 1));
  for (const auto& [token, id] : m->vocab_) m->id_to_token_[static_cast<size_t>(id)] = token;

  m->continuing_subword_prefix_ = optional_string(spec, "continuing_subword_prefix");
  m->end_of_word_suffix_ = optional_string(spec, "end_of_word_suffix");
  m->byte_fallback_ = spec.value("byte_fallback", false);
  m->fuse_unk_ = spec.value("fuse_unk", false);
  m->ignore_merges_ = spec.value("ignore_merges", false);
  const std::string unk = optional_string(spec, "unk_token");
  if (!unk.empty()) {
    const auto it = m->vocab_.find(unk);
    if (it == m->vocab_.end()) return corrupt_file("BPE model: unk_token '" + unk + "' is not in the vocab");
    m->unk_id_ = it->second;
  }

  const size_t prefix_len = m->continuing_subword_prefix_.size();
  const auto& merges = spec.at("merges");
  m->merges_.reserve(merges.size());
  int32_t rank = 0;
  for (const auto& entry : merges) {
    std::string a, b;
    if (entry.is_string()) {
      const std::string s = entry.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        return corrupt_file("BPE model: merge '" + s + "' is not two tokens separated by one space");
      a = s.substr(0, space);
      b = s.substr(space + 1);
    } else {
      if (!entry.is_array() || entry.size() != 2) return corrupt_file("BPE model: a merge is not a pair of tokens");
      a = entry[0].get<std::string>();
      b = entry[1].get<std::string>();
    }
    const auto ia = m->vocab_.find(a), ib = m->vocab_.find(b);
    const std::string merged = a + (b.size() >= prefix_len ? b.substr(prefix_len) : std::string());
    const auto im = m->vocab_.find(merged);
    if (ia == m->vocab_.end() || ib == m->vocab_.end() || im == m->vocab_.end())
      return corrupt_file("BPE model: merge '" + a + " " + b + "' uses a token that is not in the vocab");
    m->merges_[pair_key(ia->second, ib->second)] = Merge{rank++, im->second};
  }

  if (m->byte_fallback_) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      m->byte_ids_[b] = m->token_to_id(name);
    }
  }
  m->small_char_id_.assign(kSmallChars, -1);
  for (const auto& [token, id] : m->vocab_) {
    size_t i = 0;
    if (token.empty()) continue;
    const uint32_t cp = utf8_next(token, i);
    if (i == token.size() && cp < kSmallChars) m->small_char_id_[cp] = id;
  }
  return m;
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return nullptr;
  const std::string& t = id_to_token_[static_cast<size_t>(id)];
  return t.empty() && !vocab_.count(t) ? nullptr : &t;
}

std::optional<int32_t> BpeModel::char_id(std::string_view ch) const {
  size_t i = 0;
  const uint32_t cp = utf8_next(ch, i);
  if (cp < kSmallChars) {
    const int32_t id = small_char_id_[cp];
    if (id < 0) return std::nullopt;
    return id;
  }
  return token_to_id(ch);
}

void BpeModel::initial_symbols(std::string_view word, std::vector<int32_t>& ids) const {
  const bool affixes = !continuing_subword_prefix_.empty() || !end_of_word_suffix_.empty();
  int32_t pending_unk = -1;
  std::string s;
  for (size_t i = 0; i < word.size();) {
    const size_t begin = i;
    utf8_next(word, i);
    const std::string_view ch = word.substr(begin, i - begin);
    std::optional<int32_t> id;
    if (!affixes) {
      id = char_id(ch);
    } else {
      s.clear();
      if (begin != 0) s += continuing_subword_prefix_;
      s += ch;
      if (i == word.size()) s += end_of_word_suffix_;
      id = token_to_id(s);
    }
    if (id) {
      if (pending_unk >= 0) ids.push_back(pending_unk);
      pending_unk = -1;
      ids.push_back(*id);
      continue;
    }
    if (byte_fallback_) {
      const std::string_view bytes = affixes ? std::string_view(s) : ch;
      bool all = true;
      for (char c : bytes) all = all && byte_ids_[static_cast<uint8_t>(c)].has_value();
      if (all) {  // as tokenizers does, a pending unk is not flushed before fallback bytes
        for (char c : bytes) ids.push_back(*byte_ids_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk >= 0 && !fuse_unk_) ids.push_back(pending_unk);
      pending_unk = *unk_id_;
    }
  }
  if (pending_unk >= 0) ids.push_back(pending_unk);
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  thread_local std::vector<int32_t> ids;
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap;
  ids.clear();
  initial_symbols(word, ids);
  const auto n = static_cast<int32_t>(ids.size());
  if (n <= 1) {
    out.insert(out.end(), ids.begin(), ids.end());
    return;
  }
  symbols.resize(static_cast<size_t>(n));
  heap.clear();
  const auto push = [](const Candidate& c) {
    heap.push_back(c);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (int32_t i = 0; i < n; ++i) {
    symbols[static_cast<size_t>(i)] = {ids[static_cast<size_t>(i)], i - 1, i + 1 < n ? i + 1 : -1, true};
    if (i + 1 < n) {
      const auto it = merges_.find(pair_key(ids[static_cast<size_t>(i)], ids[static_cast<size_t>(i) + 1]));
      if (it != merges_.end()) heap.push_back({it->second.rank, i, it->second.new_id});
    }
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = symbols[static_cast<size_t>(top.pos)];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[static_cast<size_t>(left.next)];
    const auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // a stale candidate
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) symbols[static_cast<size_t>(left.next)].prev = top.pos;
    if (left.prev >= 0) {
      const auto p = merges_.find(pair_key(symbols[static_cast<size_t>(left.prev)].id, left.id));
      if (p != merges_.end()) push({p->second.rank, left.prev, p->second.new_id});
    }
    if (left.next >= 0) {
      const auto q = merges_.find(pair_key(left.id, symbols[static_cast<size_t>(left.next)].id));
      if (q != merges_.end()) push({q->second.rank, top.pos, q->second.new_id});
    }
  }
  for (int32_t i = 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) out.push_back(symbols[static_cast<size_t>(i)].id);
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    const auto it = vocab_.find(word);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    const auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = out.size();
  merge_word(word, out);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kCacheMaxEntries) cache_.clear();
    cache_.emplace(std::string(word), std::vector<int32_t>(out.begin() + static_cast<std::ptrdiff_t>(first), out.end()));
  }
}

}  // namespace ft::tok
