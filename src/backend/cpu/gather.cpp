// Row gathers and scatters: embedding lookup and storing a batch's keys and values into the paged cache.
#include <cstring>

#include "backend/cpu/common.h"
#include "backend/cpu/cpu_ops.h"

namespace ft::cpu {
namespace {

// dst[0, n) (dst_dtype) = src[0, n) (src_dtype); both f32 or bf16.
void copy_row(const CpuKernels& kn, const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n) {
  if (src_dtype == dst_dtype)
    std::memcpy(dst, src, dtype_bytes(src_dtype, static_cast<size_t>(n)));
  else if (src_dtype == DType::kBF16)
    kn.bf16_to_f32(static_cast<const uint16_t*>(src), static_cast<float*>(dst), n);
  else
    kn.f32_to_bf16(static_cast<const float*>(src), static_cast<uint16_t*>(dst), n);
}

}  // namespace

Status embedding(const Tensor& table,  // [n_rows, d] f32/bf16
                 const Tensor& ids,    // [n] i32
                 const Tensor& out,    // [n, d] f32
                 Stream& s) {
  if (!is_f32_or_bf16(table.dtype)) return dtype_error("embedding", "table", table);
  if (ids.dtype != DType::kI32) return dtype_error("embedding", "ids", ids);
  if (out.dtype != DType::kF32) return dtype_error("embedding", "out", out);
  if (table.ndim != 2 || out.ndim != 2 || out.dim(1) != table.dim(1) || ids.numel() != out.dim(0))
    return shape_error("embedding", "table [n_rows, d], ids [n], out [n, d] do not match");
  const int64_t n = out.dim(0), d = table.dim(1);
  const int32_t* id = ids.ptr<const int32_t>();
  for (int64_t i = 0; i < n; ++i)
    if (id[i] < 0 || id[i] >= table.dim(0))
      return shape_error("embedding", "token id " + std::to_string(id[i]) + " is out of range");
  const CpuKernels& kn = kernels();
  const size_t elem = dtype_bits(table.dtype) / 8;
  parallel_for(s, n, 4, [&](int, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      copy_row(kn, static_cast<const char*>(table.data()) + elem * static_cast<size_t>(id[i] * table.stride[0]),
               table.dtype, out.ptr<float>() + i * out.stride[0], DType::kF32, d);
  });
  return ok_status();
}

Status kv_store(const Tensor& k,        // [n, n_kv, hd_k] f32
                const Tensor& v,        // [n, n_kv, hd_v] f32, or undefined (keys only)
                const Tensor& slots,    // [n] i32: page * page_size + row
                const Tensor& k_cache,  // [n_pages, page_size, n_kv, hd_k] f32/bf16
                const Tensor& v_cache,  // [n_pages, page_size, n_kv, hd_v] f32/bf16, or undefined with v
                Stream& s) {
  const bool values = v.defined();
  if (values != v_cache.defined()) return shape_error("kv_store", "v and v_cache must both be given or neither");
  if (k.dtype != DType::kF32 || (values && v.dtype != DType::kF32)) return dtype_error("kv_store", "k/v", k);
  if (!is_f32_or_bf16(k_cache.dtype) || (values && !is_f32_or_bf16(v_cache.dtype)))
    return dtype_error("kv_store", "cache", k_cache);
  if (slots.dtype != DType::kI32) return dtype_error("kv_store", "slots", slots);
  if (k.ndim != 3 || k_cache.ndim != 4 || slots.numel() != k.dim(0) || k_cache.dim(2) != k.dim(1) ||
      k_cache.dim(3) != k.dim(2))
    return shape_error("kv_store", "k, slots and k_cache do not match");
  if (values && (v.ndim != 3 || v_cache.ndim != 4 || v.dim(0) != k.dim(0) || v_cache.dim(2) != v.dim(1) ||
                 v_cache.dim(3) != v.dim(2) || v_cache.dim(0) != k_cache.dim(0) || v_cache.dim(1) != k_cache.dim(1)))
    return shape_error("kv_store", "v and v_cache do not match k and k_cache");
  const int64_t n = k.dim(0), n_kv = k.dim(1), page_size = k_cache.dim(1);
  const int64_t capacity = k_cache.dim(0) * page_size;
  const int32_t* slot = slots.ptr<const int32_t>();
  for (int64_t i = 0; i < n; ++i)
    if (slot[i] < 0 || slot[i] >= capacity) return shape_error("kv_store", "slot " + std::to_string(slot[i]) + " is out of range");
  const CpuKernels& kn = kernels();
  parallel_for(s, n * n_kv, 8, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i = r / n_kv, h = r % n_kv;
      const int64_t page = slot[i] / page_size, row = slot[i] % page_size;
      for (const auto& [src, cache] : {std::pair{&k, &k_cache}, std::pair{&v, &v_cache}}) {
        if (!src->defined()) continue;
        const int64_t off = page * cache->stride[0] + row * cache->stride[1] + h * cache->stride[2];
        copy_row(kn, src->ptr<const float>() + i * src->stride[0] + h * src->stride[1], DType::kF32,
                 static_cast<char*>(cache->data()) + dtype_bytes(cache->dtype, static_cast<size_t>(off)),
                 cache->dtype, src->dim(2));
      }
    }
  });
  return ok_status();
}

}  // namespace ft::cpu
