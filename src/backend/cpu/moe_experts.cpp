// moe_experts: the routed experts of a batch. The (token, slot) pairs are sorted by expert so that each
// expert's tokens form one run; every run goes through gate_up as one GEMM (a GEMV for decode), the biases and the
// activation (of gate and up rows in two halves, or alternating), then down as a second GEMM (and its bias); the
// outputs are combined per token in fp32 with the router weights.
// Work items are (run, L2-sized block of weight rows), handed out dynamically.
#include <algorithm>

#include "backend/cpu/common.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/gemm.h"
#include "backend/expert_activation.h"

namespace ft::cpu {
namespace {

size_t align64(size_t b) { return (b + 63) / 64 * 64; }

// The workspace carved into its arrays; P = n_tokens * n_expert_used pairs, in expert-sorted order.
struct Layout {
  int64_t* keys;       // [P] expert * P + pair, sorted
  int32_t* run_start;  // [P + 1] first sorted position of each expert's run
  int32_t* token;      // [P] token of each sorted position
  int32_t* position;   // [P] sorted position of each pair
  float* h;            // [P, 2 * inter] gate_up outputs; the activation in the first half
  float* y;            // [P, d] down outputs

  static size_t bytes(int64_t p, int64_t d, int64_t inter) {
    const size_t up = static_cast<size_t>(p);
    return 64 + align64(8 * up) + align64(4 * (up + 1)) + 2 * align64(4 * up) +
           align64(4 * up * static_cast<size_t>(2 * inter)) + align64(4 * up * static_cast<size_t>(d));
  }
  Layout(void* base, int64_t p, int64_t d, int64_t inter) {
    auto at = reinterpret_cast<uintptr_t>(base);
    at = (at + 63) / 64 * 64;
    auto take = [&](size_t b) {
      void* r = reinterpret_cast<void*>(at);
      at += align64(b);
      return r;
    };
    const size_t up = static_cast<size_t>(p);
    keys = static_cast<int64_t*>(take(8 * up));
    run_start = static_cast<int32_t*>(take(4 * (up + 1)));
    token = static_cast<int32_t*>(take(4 * up));
    position = static_cast<int32_t*>(take(4 * up));
    h = static_cast<float*>(take(4 * up * static_cast<size_t>(2 * inter)));
    y = static_cast<float*>(take(4 * up * static_cast<size_t>(d)));
  }
};

// Expert e's rows of w [n_expert, rows, cols], with their scales [n_expert, rows, cols / 32] for MXFP4 weights.
WRows expert_rows(const Tensor& w, const Tensor& scales, int64_t e) {
  WRows r{static_cast<const char*>(w.data()) + dtype_bytes(w.dtype, static_cast<size_t>(e * w.stride[0])), w.dtype,
          w.stride[1]};
  if (scales.defined()) {
    r.scales = scales.ptr<const uint8_t>() + e * scales.stride[0];
    r.scale_stride = scales.stride[1];
  }
  return r;
}

// row[i] += bias[e, i] for i < n (bias f32 or bf16, its expert dim strided); nothing when bias is undefined.
void add_bias(const Tensor& bias, int64_t e, float* row, int64_t n) {
  if (!bias.defined()) return;
  const int64_t at = e * bias.stride[0];
  if (bias.dtype == DType::kF32) {
    const float* b = bias.ptr<const float>() + at;
    for (int64_t i = 0; i < n; ++i) row[i] += b[i];
  } else {
    const uint16_t* b = bias.ptr<const uint16_t>() + at;
    for (int64_t i = 0; i < n; ++i) row[i] += bf16_to_f32(b[i]);
  }
}

}  // namespace

size_t moe_workspace_bytes(int64_t n_tokens, int64_t n_expert_used, int64_t d, int64_t inter) {
  return Layout::bytes(n_tokens * n_expert_used, d, inter);
}

Status moe_experts(const Tensor& x,          // [n, d] f32
                   const Tensor& ids,        // [n, k] i32
                   const Tensor& weights,    // [n, k] f32
                   const Tensor& gate_up,    // [n_expert, 2 * inter, d] f32/bf16/f4_e2m1
                   const Tensor& down,       // [n_expert, d, inter] f32/bf16/f4_e2m1
                   const Tensor& out,        // [n, d] f32
                   const Tensor& workspace,  // moe_workspace_bytes(n, k, d, inter) bytes
                   const MoeExpertParams& p, Stream& s) {
  if (x.dtype != DType::kF32 || out.dtype != DType::kF32) return dtype_error("moe_experts", "x/out", x);
  if (ids.dtype != DType::kI32 || weights.dtype != DType::kF32) return dtype_error("moe_experts", "ids/weights", ids);
  const auto weight_fits = [](DType t) { return is_f32_or_bf16(t) || t == DType::kF4E2M1; };
  if (!weight_fits(gate_up.dtype) || !weight_fits(down.dtype))
    return dtype_error("moe_experts", "expert weights", gate_up);
  if (x.ndim != 2 || out.ndim != 2 || ids.ndim != 2 || gate_up.ndim != 3 || down.ndim != 3)
    return shape_error("moe_experts", "x/out [n, d], ids [n, k], gate_up/down 3-d expected");
  const int64_t n = x.dim(0), d = x.dim(1), k = ids.dim(1), n_expert = gate_up.dim(0), inter = down.dim(2);
  if (!same_shape(x, out) || ids.dim(0) != n || !same_shape(ids, weights) || gate_up.dim(1) != 2 * inter ||
      gate_up.dim(2) != d || down.dim(0) != n_expert || down.dim(1) != d)
    return shape_error("moe_experts", "x, ids, weights, gate_up, down and out do not match");
  if (!expert_biases_fit(p, gate_up.dtype, n_expert, inter, d))
    return shape_error("moe_experts", "biases must be [n_expert, 2 inter] and [n_expert, d] in the weights' dtype");
  if (!expert_scales_fit(p, gate_up, down))
    return shape_error("moe_experts", "MXFP4 weights need their scales [n_expert, rows, cols / 32] ue8m0");
  const int64_t n_pairs = n * k;
  if (!workspace.defined() || workspace.nbytes() < Layout::bytes(n_pairs, d, inter))
    return shape_error("moe_experts", "workspace smaller than moe_workspace_bytes");
  if (n_pairs == 0) return ok_status();

  const Layout ws(workspace.data(), n_pairs, d, inter);
  int64_t n_skipped = 0;  // pairs with id -1, computed elsewhere: sorted first, then dropped
  for (int64_t t = 0; t < n; ++t) {
    const int32_t* id = ids.ptr<const int32_t>() + t * ids.stride[0];
    for (int64_t j = 0; j < k; ++j) {
      if (id[j] < -1 || id[j] >= n_expert) return shape_error("moe_experts", "expert id out of range");
      n_skipped += id[j] < 0;
      ws.keys[t * k + j] = (id[j] + 1) * n_pairs + t * k + j;
    }
  }
  std::sort(ws.keys, ws.keys + n_pairs);
  for (int64_t q = 0; q < n_skipped; ++q) ws.position[ws.keys[q] % n_pairs] = -1;
  int64_t n_runs = 0;
  for (int64_t q = n_skipped; q < n_pairs; ++q) {
    const int64_t pair = ws.keys[q] % n_pairs;
    ws.token[q] = static_cast<int32_t>(pair / k);
    ws.position[pair] = static_cast<int32_t>(q);
    if (q == n_skipped || ws.keys[q] / n_pairs != ws.keys[q - 1] / n_pairs)
      ws.run_start[n_runs++] = static_cast<int32_t>(q);
  }
  ws.run_start[n_runs] = static_cast<int32_t>(n_pairs);

  const CpuKernels& kn = kernels();
  // One GEMM per expert run: rows_out rows of w, from activation rows `src` (k_in wide) into dst (ld wide).
  auto run_gemm = [&](const Tensor& w, const Tensor& scales, int64_t rows_out, int64_t k_in, auto src, float* dst,
                      int64_t ld) {
    const int64_t rows = gemm_block_rows(k_in, w.dtype), n_blocks = (rows_out + rows - 1) / rows;
    parallel_items(s, n_runs * n_blocks, [&](int64_t item) {
      const int64_t r = item / n_blocks, j0 = item % n_blocks * rows, j1 = std::min(rows_out, j0 + rows);
      const int64_t q0 = ws.run_start[r], count = ws.run_start[r + 1] - q0;
      gemm_block(kn, src(q0), count, expert_rows(w, scales, ws.keys[q0] / n_pairs - 1), j0, j1, k_in,
                 dst + q0 * ld + j0, ld);
    });
  };
  if (n_runs == 0) {  // every pair is computed elsewhere
    for (int64_t t = 0; t < n; ++t) std::fill_n(out.ptr<float>() + t * out.stride[0], d, 0.0f);
    return ok_status();
  }
  run_gemm(
      gate_up, p.gate_up_scales, 2 * inter, d,
      [&](int64_t q0) {
        return XRows{x.ptr<const float>(), x.stride[0], ws.token + q0};
      },
      ws.h, 2 * inter);
  const auto expert_at = [&](int64_t q) { return ws.keys[q] / n_pairs - 1; };  // sorted position q's expert
  parallel_for(s, n_pairs - n_skipped, 4, [&](int, int64_t q0, int64_t q1) {
    for (int64_t q = n_skipped + q0; q < n_skipped + q1; ++q) {
      float* hq = ws.h + q * 2 * inter;
      add_bias(p.gate_up_bias, expert_at(q), hq, 2 * inter);
      if (p.gate_up_interleaved) {  // in place, in order: h[i] is written after h[2i] and h[2i + 1] are read
        for (int64_t i = 0; i < inter; ++i) hq[i] = expert_activation(p.act, hq[2 * i], hq[2 * i + 1]);
      } else if (p.act.kind == ExpertActivation::kSwiglu) {
        kn.silu_mul(hq, hq + inter, hq, inter);
      } else {
        for (int64_t i = 0; i < inter; ++i) hq[i] = expert_activation(p.act, hq[i], hq[inter + i]);
      }
    }
  });
  run_gemm(
      down, p.down_scales, d, inter,
      [&](int64_t q0) {
        return XRows{ws.h + q0 * 2 * inter, 2 * inter};
      },
      ws.y, d);
  if (p.down_bias.defined())
    parallel_for(s, n_pairs - n_skipped, 4, [&](int, int64_t q0, int64_t q1) {
      for (int64_t q = n_skipped + q0; q < n_skipped + q1; ++q) add_bias(p.down_bias, expert_at(q), ws.y + q * d, d);
    });
  parallel_for(s, n, 1, [&](int, int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* o = out.ptr<float>() + t * out.stride[0];
      std::fill(o, o + d, 0.0f);
      const float* w = weights.ptr<const float>() + t * weights.stride[0];
      for (int64_t j = 0; j < k; ++j)
        if (ws.position[t * k + j] >= 0) kn.axpy_f32(w[j], ws.y + static_cast<int64_t>(ws.position[t * k + j]) * d, o, d);
    }
  });
  return ok_status();
}

}  // namespace ft::cpu
