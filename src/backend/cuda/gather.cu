// Row gathers and scatters: embedding (table rows by id) and kv_store (keys/values into paged cache slots).
// Ids or slots out of range are skipped (the rows they name stay as they were): a kernel cannot return an
// error without a host round trip, and the model validates token ids before uploading them.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"

namespace ft::cuda {
namespace {

template <class TT, class TO>
__global__ void embedding_kernel(const TT* table, int64_t table_stride, int64_t n_rows, const int32_t* ids,
                                 TO* out, int64_t out_stride, int64_t d) {
  const int64_t i = blockIdx.x;
  const int64_t id = ids[i];
  if (id < 0 || id >= n_rows) return;
  const TT* src = table + id * table_stride;
  TO* dst = out + i * out_stride;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) dst[j] = from_f32<TO>(to_f32(src[j]));
}

// One block per token: every kv head's key and value row (v null: keys only) into the token's slot.
template <class TS, class TC>
__global__ void kv_store_kernel(const TS* k, int64_t k_tok, int64_t k_head, const TS* v, int64_t v_tok,
                                int64_t v_head, const int32_t* slots, int64_t n_slots, int64_t n_kv, int64_t hd_k,
                                int64_t hd_v, TC* k_cache, TC* v_cache) {
  const int64_t t = blockIdx.x, slot = slots[t];
  if (slot < 0 || slot >= n_slots) return;
  TC* kc = k_cache + slot * n_kv * hd_k;
  TC* vc = v_cache + slot * n_kv * hd_v;
  for (int64_t i = threadIdx.x; i < n_kv * hd_k; i += blockDim.x)
    kc[i] = from_f32<TC>(to_f32(k[t * k_tok + i / hd_k * k_head + i % hd_k]));
  if (v == nullptr) return;  // keys only
  for (int64_t i = threadIdx.x; i < n_kv * hd_v; i += blockDim.x)
    vc[i] = from_f32<TC>(to_f32(v[t * v_tok + i / hd_v * v_head + i % hd_v]));
}

}  // namespace

Status embedding(const Tensor& table,  // [n_rows, d] f32/bf16
                 const Tensor& ids,    // [n] i32
                 const Tensor& out,    // [n, d] f32/bf16
                 Stream& s) {
  FT_RETURN_IF_ERROR(device_check("embedding", {&table, &ids, &out}));
  if (!is_fb(table.dtype) || !is_fb(out.dtype)) return dtype_error("embedding", "table/out", table);
  if (ids.dtype != DType::kI32) return dtype_error("embedding", "ids", ids);
  if (table.ndim != 2 || out.ndim != 2 || ids.numel() != out.dim(0) || out.dim(1) != table.dim(1))
    return shape_error("embedding", "table [rows, d], ids [n], out [n, d] expected");
  const int64_t n = out.dim(0), d = out.dim(1);
  if (n == 0) return ok_status();
  const int block = d >= 512 ? 256 : 64;
  with_types({table.dtype, out.dtype}, [&](auto tt, auto to) {
    using TT = decltype(tt);
    using TO = decltype(to);
    embedding_kernel<TT, TO><<<static_cast<unsigned>(n), block, 0, cuda_stream(s).get()>>>(
        table.ptr<const TT>(), table.stride[0], table.dim(0), ids.ptr<const int32_t>(), out.ptr<TO>(),
        out.stride[0], d);
  });
  return launch_status("embedding");
}

Status kv_store(const Tensor& k,        // [n, n_kv, hd_k] f32/bf16
                const Tensor& v,        // [n, n_kv, hd_v] like k, or undefined (keys only)
                const Tensor& slots,    // [n] i32
                const Tensor& k_cache,  // [n_pages, page_size, n_kv, hd_k] contiguous
                const Tensor& v_cache,  // [n_pages, page_size, n_kv, hd_v] like k_cache, undefined with v
                Stream& s) {
  FT_RETURN_IF_ERROR(device_check("kv_store", {&k, &v, &slots, &k_cache, &v_cache}));
  const bool values = v.defined();
  if (values != v_cache.defined()) return shape_error("kv_store", "v and v_cache must both be given or neither");
  if (!is_fb(k.dtype) || (values && v.dtype != k.dtype)) return dtype_error("kv_store", "k/v", k);
  if (!is_fb(k_cache.dtype) || (values && v_cache.dtype != k_cache.dtype))
    return dtype_error("kv_store", "cache", k_cache);
  if (slots.dtype != DType::kI32) return dtype_error("kv_store", "slots", slots);
  if (k.ndim != 3 || k_cache.ndim != 4 || !k_cache.is_contiguous() || slots.numel() != k.dim(0) ||
      k_cache.dim(2) != k.dim(1) || k_cache.dim(3) != k.dim(2))
    return shape_error("kv_store", "k, slots and k_cache do not match");
  if (values && (v.ndim != 3 || v_cache.ndim != 4 || !v_cache.is_contiguous() || v.dim(0) != k.dim(0) ||
                 v.dim(1) != k.dim(1) || v_cache.dim(2) != v.dim(1) || v_cache.dim(3) != v.dim(2) ||
                 k_cache.dim(0) != v_cache.dim(0) || k_cache.dim(1) != v_cache.dim(1)))
    return shape_error("kv_store", "v and v_cache do not match k and k_cache");
  const int64_t n = k.dim(0);
  if (n == 0) return ok_status();
  with_types({k.dtype, k_cache.dtype}, [&](auto ts, auto tc) {
    using TS = decltype(ts);
    using TC = decltype(tc);
    kv_store_kernel<TS, TC><<<static_cast<unsigned>(n), 256, 0, cuda_stream(s).get()>>>(
        k.ptr<const TS>(), k.stride[0], k.stride[1], values ? v.ptr<const TS>() : nullptr, values ? v.stride[0] : 0,
        values ? v.stride[1] : 0, slots.ptr<const int32_t>(), k_cache.dim(0) * k_cache.dim(1), k.dim(1), k.dim(2),
        values ? v.dim(2) : 0, k_cache.ptr<TC>(), values ? v_cache.ptr<TC>() : nullptr);
  });
  return launch_status("kv_store");
}

}  // namespace ft::cuda
