// The expert cache's LRU bookkeeping on raw pointers, one algorithm for the host and the device (a single
// thread runs it: a lookup touches at most n k keys, each in O(1) list operations). See OpTable::moe_cache_lookup.
#pragma once

#include <algorithm>
#include <cstdint>

#include "backend/host_device.h"
#include "backend/ops.h"

namespace ft::expert_lru {

struct Tables {
  int32_t* slot_of;    // [n_keys]
  int32_t* key_of;     // [n_slots]
  int32_t* prev;       // [n_slots + 1]: ring through the sentinel n_slots
  int32_t* next;       // [n_slots + 1]
  int64_t* mark;       // [n_keys]: the lookup that last saw the key
  int64_t* calls;      // [1]
  const float* share;  // [1]
  int64_t* stats;      // [n_moe_layers, 3]
  int32_t* miss_keys;  // [n k]
  int32_t n_slots;
};

struct Pairs {
  const int32_t* ids;  // [n, k] expert ids, row stride ld
  int64_t ld, n, k;
  int32_t* slot_ids;  // [n, k], row stride slot_ld
  int64_t slot_ld;
  int32_t* cpu_ids;  // [n, k], row stride cpu_ld
  int64_t cpu_ld;
};

FT_HOST_DEVICE inline void move_to_front(const Tables& t, int32_t s) {
  const int32_t head = t.n_slots;
  t.next[t.prev[s]] = t.next[s];
  t.prev[t.next[s]] = t.prev[s];
  t.prev[s] = head;
  t.next[s] = t.next[head];
  t.prev[t.next[head]] = s;
  t.next[head] = s;
}

FT_HOST_DEVICE inline int32_t expert_of(const Pairs& p, int64_t pair, int64_t n_expert) {
  const int32_t e = p.ids[pair / p.k * p.ld + pair % p.k];
  return e >= 0 && e < n_expert ? e : -1;
}

// fills [1 + n k]: the count of fetched keys, then their slots.
FT_HOST_DEVICE inline void lookup(const Tables& t, const Pairs& p, int64_t moe_layer, int64_t n_expert, int32_t* fills) {
  const int64_t call = ++*t.calls, base = moe_layer * n_expert, n_pairs = p.n * p.k;
  int32_t n_miss = 0;
  int64_t hits = 0;
  for (int64_t q = 0; q < n_pairs; ++q) {
    const int32_t e = expert_of(p, q, n_expert);
    if (e < 0 || t.mark[base + e] == call) continue;
    t.mark[base + e] = call;
    const int32_t s = t.slot_of[base + e];
    if (s >= 0) {
      move_to_front(t, s);
      ++hits;
    } else {
      t.miss_keys[n_miss++] = static_cast<int32_t>(base + e);
    }
  }
  const float share = *t.share;
  const int32_t n_fill = share >= 1.0f ? n_miss : share <= 0.0f ? 0 : static_cast<int32_t>(share * n_miss + 0.5f);
  for (int32_t i = 0; i < n_fill; ++i) {
    const int32_t key = t.miss_keys[i], s = t.prev[t.n_slots];  // the least recently used slot
    if (t.key_of[s] >= 0) t.slot_of[t.key_of[s]] = -1;
    t.key_of[s] = key;
    t.slot_of[key] = s;
    move_to_front(t, s);
    fills[1 + i] = s;
  }
  fills[0] = n_fill;
  int64_t* st = t.stats + moe_layer * 3;
  st[0] += hits;
  st[1] += n_fill;
  st[2] += n_miss - n_fill;
  for (int64_t q = 0; q < n_pairs; ++q) {
    const int32_t e = expert_of(p, q, n_expert);
    const int32_t s = e < 0 ? -1 : t.slot_of[base + e];
    p.slot_ids[q / p.k * p.slot_ld + q % p.k] = s;
    p.cpu_ids[q / p.k * p.cpu_ld + q % p.k] = e >= 0 && s < 0 ? e : -1;
  }
}

// The tables' pointers, after checking shapes and dtypes (the op's contract).
inline Result<Tables> tables_of(const ExpertCacheTables& c, const Tensor& ids, const Tensor& slot_ids,
                                const Tensor& cpu_ids, const Tensor& fills, const MoeCacheLookupParams& mp) {
  const int64_t n_slots = c.key_of.numel(), n_keys = c.slot_of.numel();
  for (const Tensor* i32 : {&ids, &slot_ids, &cpu_ids, &fills, &c.slot_of, &c.key_of, &c.lru, &c.miss_keys})
    if (i32->dtype != DType::kI32) return invalid_argument("moe_cache_lookup: i32 tensors expected");
  if (c.mark.dtype != DType::kI64 || c.calls.dtype != DType::kI64 || c.stats.dtype != DType::kI64 ||
      c.share.dtype != DType::kF32)
    return invalid_argument("moe_cache_lookup: mark, calls, stats i64 and share f32 expected");
  const int64_t n = ids.dim(0), k = ids.ndim == 2 ? ids.dim(1) : 0;
  if (ids.ndim != 2 || !same_shape(ids, slot_ids) || !same_shape(ids, cpu_ids) || fills.numel() < 1 + n * k ||
      std::min(n * k, mp.n_expert) > n_slots || c.miss_keys.numel() < std::min(n * k, mp.n_expert) || c.lru.numel() != 2 * (n_slots + 1) ||
      c.mark.numel() != n_keys || mp.n_expert <= 0 || mp.moe_layer < 0 || (mp.moe_layer + 1) * mp.n_expert > n_keys ||
      c.stats.numel() < 3 * (mp.moe_layer + 1) || n_slots > INT32_MAX || !c.lru.is_contiguous())
    return invalid_argument("moe_cache_lookup: ids " + ids.shape_string() + " do not fit the cache tables (" +
                            std::to_string(n_slots) + " slots, " + std::to_string(n_keys) + " keys)");
  auto* lru = c.lru.ptr<int32_t>();
  return Tables{c.slot_of.ptr<int32_t>(), c.key_of.ptr<int32_t>(), lru, lru + n_slots + 1, c.mark.ptr<int64_t>(),
                c.calls.ptr<int64_t>(), c.share.ptr<const float>(), c.stats.ptr<int64_t>(),
                c.miss_keys.ptr<int32_t>(), static_cast<int32_t>(n_slots)};
}

inline Pairs pairs_of(const Tensor& ids, const Tensor& slot_ids, const Tensor& cpu_ids) {
  return {ids.ptr<const int32_t>(), ids.stride[0], ids.dim(0), ids.dim(1), slot_ids.ptr<int32_t>(), slot_ids.stride[0],
          cpu_ids.ptr<int32_t>(),   cpu_ids.stride[0]};
}

// moe_cache_fill's and moe_chunk_ids' contracts.
inline Status check_fill(const Tensor& src, const Tensor& dst, const Tensor& fills, const Tensor& key_of,
                         const Tensor& timing) {
  if (src.ndim != 2 || dst.ndim != 2 || src.dim(1) != dst.dim(1) || src.dtype != DType::kU8 ||
      dst.dtype != DType::kU8 || !src.is_contiguous() || !dst.is_contiguous() || fills.dtype != DType::kI32 ||
      key_of.dtype != DType::kI32 || key_of.numel() != dst.dim(0))
    return invalid_argument("moe_cache_fill: src [n_keys, R] and dst [n_slots, R] u8, fills and key_of i32 expected");
  if (timing.defined() && (timing.dtype != DType::kI64 || timing.numel() != 4 || !timing.is_contiguous()))
    return invalid_argument("moe_cache_fill: timing [4] i64 expected");
  return ok_status();
}

inline Status check_chunk_ids(const Tensor& ids, const Tensor& out) {
  if (ids.ndim != 2 || !same_shape(ids, out) || ids.dtype != DType::kI32 || out.dtype != DType::kI32 ||
      !ids.rows_contiguous() || !out.rows_contiguous())
    return invalid_argument("moe_chunk_ids: ids and out [n, k] i32 expected");
  return ok_status();
}

}  // namespace ft::expert_lru
