// attention: causal GQA over the paged KV cache with an online softmax in fp32, page by page. One task is
// (token, kv head, up to kTileX query heads of its group), so each key row is read once for those heads.
#include <algorithm>
#include <cmath>

#include "backend/cpu/common.h"
#include "backend/cpu/cpu_ops.h"

namespace ft::cpu {
namespace {

constexpr int64_t kMaxHeadDim = 512;  // hd_v limit of the per-task accumulators on the stack
constexpr int64_t kBlock = 64;        // keys scored at once

struct Cache {
  const char* data;
  DType dtype;
  int64_t page_stride, row_stride, head_stride;
  // Key/value row `row` of page `page`, kv head h.
  const void* row(int64_t page, int64_t r, int64_t h) const {
    return data + dtype_bytes(dtype, static_cast<size_t>(page * page_stride + r * row_stride + h * head_stride));
  }
};

Cache cache_of(const Tensor& t) { return {static_cast<const char*>(t.data()), t.dtype, t.stride[0], t.stride[1], t.stride[2]}; }

float load_f(const Tensor& t, int64_t i) {
  return t.dtype == DType::kBF16 ? bf16_to_f32(t.ptr<const uint16_t>()[i]) : t.ptr<const float>()[i];
}

Status check(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const PagedAttentionMeta& meta,
             const Tensor& out, const AttentionParams& p) {
  if (q.dtype != DType::kF32 || out.dtype != DType::kF32) return dtype_error("attention", "q/out", q);
  if (k_cache.dtype != v_cache.dtype || !is_f32_or_bf16(k_cache.dtype))
    return dtype_error("attention", "cache", k_cache);
  if (meta.q_start.dtype != DType::kI32 || meta.kv_len.dtype != DType::kI32 || meta.page_table.dtype != DType::kI32)
    return dtype_error("attention", "meta", meta.q_start);
  if (p.sinks.defined() && !is_f32_or_bf16(p.sinks.dtype)) return dtype_error("attention", "sinks", p.sinks);
  if (q.ndim != 3 || out.ndim != 3 || k_cache.ndim != 4 || v_cache.ndim != 4 || out.dim(0) != q.dim(0) ||
      out.dim(1) != q.dim(1) || k_cache.dim(3) != q.dim(2) || v_cache.dim(3) != out.dim(2) ||
      k_cache.dim(2) != v_cache.dim(2) || k_cache.dim(1) != meta.page_size || v_cache.dim(1) != meta.page_size ||
      q.dim(1) % k_cache.dim(2) != 0 || out.dim(2) > kMaxHeadDim)
    return shape_error("attention", "q, caches and out do not match");
  if (p.sinks.defined() && p.sinks.numel() != q.dim(1)) return shape_error("attention", "sinks must be [n_head]");
  const int32_t* q_start = meta.q_start.ptr<const int32_t>();
  const int32_t* kv_len = meta.kv_len.ptr<const int32_t>();
  if (meta.n_seq < 0 || q_start[0] != 0 || q_start[meta.n_seq] != q.dim(0))
    return shape_error("attention", "q_start must run from 0 to n_tokens");
  const int64_t max_pages = meta.page_table.dim(1);
  for (int64_t s = 0; s < meta.n_seq; ++s) {
    const int64_t n_q = q_start[s + 1] - q_start[s];
    const int64_t pages = (kv_len[s] + meta.page_size - 1) / meta.page_size;
    if (n_q < 0 || kv_len[s] < n_q || pages > max_pages)
      return shape_error("attention", "sequence " + std::to_string(s) + ": kv_len/q_start/page_table mismatch");
    for (int64_t i = 0; i < pages; ++i) {
      const int32_t page = meta.page_table.ptr<const int32_t>()[s * meta.page_table.stride[0] + i];
      if (page < 0 || page >= k_cache.dim(0)) return shape_error("attention", "page index out of range");
    }
  }
  return ok_status();
}

}  // namespace

Status attention(const Tensor& q,        // [n, n_head, hd_k] f32
                 const Tensor& k_cache,  // [n_pages, page_size, n_kv, hd_k] f32/bf16
                 const Tensor& v_cache,  // [n_pages, page_size, n_kv, hd_v] f32/bf16
                 const PagedAttentionMeta& meta, const Tensor& out,  // out [n, n_head, hd_v] f32
                 const AttentionParams& p, Stream& s) {
  FT_RETURN_IF_ERROR(check(q, k_cache, v_cache, meta, out, p));
  const int64_t n = q.dim(0), n_head = q.dim(1), hd_k = q.dim(2), hd_v = out.dim(2);
  const int64_t n_kv = k_cache.dim(2), group = n_head / n_kv, n_sub = (group + kTileX - 1) / kTileX;
  const int32_t* q_start = meta.q_start.ptr<const int32_t>();
  const int32_t* kv_len = meta.kv_len.ptr<const int32_t>();
  const Cache kc = cache_of(k_cache), vc = cache_of(v_cache);
  const bool bf16 = k_cache.dtype == DType::kBF16;
  const CpuKernels& kn = kernels();

  parallel_items(s, n * n_kv * n_sub, [&](int64_t item) {
    const int64_t t = item / (n_kv * n_sub), g = item / n_sub % n_kv, h0 = g * group + item % n_sub * kTileX;
    const int nh = static_cast<int>(std::min<int64_t>(kTileX, g * group + group - h0));
    const int64_t seq = std::upper_bound(q_start, q_start + meta.n_seq + 1, static_cast<int32_t>(t)) - q_start - 1;
    const int64_t pos = kv_len[seq] - (q_start[seq + 1] - q_start[seq]) + (t - q_start[seq]);
    const int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
    const int32_t* pages = meta.page_table.ptr<const int32_t>() + seq * meta.page_table.stride[0];

    const float* xs[kTileX];
    float m[kTileX], l[kTileX];
    float acc[kTileX][kMaxHeadDim];
    for (int i = 0; i < nh; ++i) {
      xs[i] = q.ptr<const float>() + t * q.stride[0] + (h0 + i) * q.stride[1];
      m[i] = p.sinks.defined() ? load_f(p.sinks, h0 + i) : -INFINITY;
      l[i] = p.sinks.defined() ? 1.0f : 0.0f;  // the sink's exp(sink - m) with m = sink
      std::fill(acc[i], acc[i] + hd_v, 0.0f);
    }
    float scores[kTileX][kBlock], tile[kTileX * kTileW];
    for (int64_t j = lo; j <= pos;) {
      const int64_t page = pages[j / meta.page_size], r0 = j % meta.page_size;
      const int64_t c = std::min({meta.page_size - r0, pos + 1 - j, kBlock});
      for (int64_t jj = 0; jj < c; jj += kTileW) {
        const int nw = static_cast<int>(std::min<int64_t>(kTileW, c - jj));
        const void* krow = kc.row(page, r0 + jj, g);
        if (bf16)
          kn.dot_tile_bf16(xs, nh, static_cast<const uint16_t*>(krow), kc.row_stride, nw, hd_k, tile);
        else
          kn.dot_tile_f32(xs, nh, static_cast<const float*>(krow), kc.row_stride, nw, hd_k, tile);
        for (int i = 0; i < nh; ++i)
          for (int w = 0; w < nw; ++w) scores[i][jj + w] = tile[i * kTileW + w] * p.scale;
      }
      for (int i = 0; i < nh; ++i) {
        const float block_max = *std::max_element(scores[i], scores[i] + c);
        const float m_new = std::max(m[i], block_max);
        const float alpha = std::exp(m[i] - m_new);
        if (alpha != 1.0f) {
          l[i] *= alpha;
          for (int64_t d = 0; d < hd_v; ++d) acc[i][d] *= alpha;
        }
        m[i] = m_new;
        l[i] += kn.exp_sub(scores[i], m_new, scores[i], c);
        for (int64_t jj = 0; jj < c; ++jj) {
          const void* vrow = vc.row(page, r0 + jj, g);
          if (bf16)
            kn.axpy_bf16(scores[i][jj], static_cast<const uint16_t*>(vrow), acc[i], hd_v);
          else
            kn.axpy_f32(scores[i][jj], static_cast<const float*>(vrow), acc[i], hd_v);
        }
      }
      j += c;
    }
    for (int i = 0; i < nh; ++i) {
      float* o = out.ptr<float>() + t * out.stride[0] + (h0 + i) * out.stride[1];
      const float inv = 1.0f / l[i];
      for (int64_t d = 0; d < hd_v; ++d) o[d] = acc[i][d] * inv;
    }
  });
  return ok_status();
}

}  // namespace ft::cpu
