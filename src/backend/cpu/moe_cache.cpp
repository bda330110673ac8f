// Expert cache ops on the host: the shared LRU algorithm, record copies, chunk id remapping.
#include <chrono>
#include <cstring>

#include "backend/cpu/common.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/expert_lru.h"

namespace ft::cpu {

Status moe_cache_lookup(const Tensor& ids, const ExpertCacheTables& tables, const Tensor& slot_ids,
                        const Tensor& cpu_ids, const Tensor& fills, const MoeCacheLookupParams& p, Stream&) {
  FT_ASSIGN_OR_RETURN(expert_lru::Tables t, expert_lru::tables_of(tables, ids, slot_ids, cpu_ids, fills, p));
  expert_lru::lookup(t, expert_lru::pairs_of(ids, slot_ids, cpu_ids), p.moe_layer, p.n_expert, fills.ptr<int32_t>());
  return ok_status();
}

Status moe_cache_fill(const Tensor& src, const Tensor& dst, const Tensor& fills, const Tensor& key_of,
                      const Tensor& timing, Stream& s) {
  FT_RETURN_IF_ERROR(expert_lru::check_fill(src, dst, fills, key_of, timing));
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t* f = fills.ptr<const int32_t>();
  const int64_t record = src.dim(1);
  for (int32_t i = 0; i < f[0]; ++i) {
    const int32_t slot = f[1 + i], key = key_of.ptr<const int32_t>()[slot];
    if (slot < 0 || slot >= dst.dim(0) || key < 0 || key >= src.dim(0))
      return invalid_argument("moe_cache_fill: slot or key out of range");
    const auto* from = src.ptr<const unsigned char>() + key * record;
    auto* to = dst.ptr<unsigned char>() + slot * record;
    parallel_for(s, record, 1 << 16, [&](int, int64_t b, int64_t e) { std::memcpy(to + b, from + b, static_cast<size_t>(e - b)); });
  }
  if (timing.defined())
    timing.ptr<int64_t>()[0] +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  return ok_status();
}

Status moe_chunk_ids(const Tensor& ids, int64_t first, int64_t count, const Tensor& out, Stream&) {
  FT_RETURN_IF_ERROR(expert_lru::check_chunk_ids(ids, out));
  for (int64_t t = 0; t < ids.dim(0); ++t)
    for (int64_t j = 0; j < ids.dim(1); ++j) {
      const int32_t e = ids.ptr<const int32_t>()[t * ids.stride[0] + j];
      out.ptr<int32_t>()[t * out.stride[0] + j] = e >= first && e < first + count ? static_cast<int32_t>(e - first) : -1;
    }
  return ok_status();
}

}  // namespace ft::cpu
