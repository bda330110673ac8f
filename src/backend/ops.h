// The op table: every op has one name and one signature in every backend (ref, cpu, cuda).
//
// Contract for every op: takes views, writes into `out` (a view the caller allocated), never
// allocates, returns Status (kUnsupported when the backend cannot run these dtypes/shapes, with
// supports() saying so beforehand), and runs on `stream`. Inputs have contiguous innermost rows;
// outer dims may be strided. Activations are f32 (CPU) or bf16/f32 (CUDA); weights keep their
// checkpoint dtype. Every reduction accumulates in fp32 or wider.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/tensor.h"
#include "freetoken/status.h"

namespace ft {

class Stream;

enum class Op {
  kEmbedding,
  kMatmul,
  kRmsNorm,
  kRope,
  kAddRmsNormMatmul,
  kQkNormRopeStore,
  kSwiglu,
  kSoftmax,
  kAdd,
  kConvert,
  kKvStore,
  kAttention,
  kMoeRoute,
  kMoeExperts,
  kConv1dSilu,
  kGatedDeltaChunked,
  kGatedDeltaStep,
  kRmsNormGated,
  kSigmoidMul,
  kSample,
  kMoeCacheLookup,
  kMoeCacheFill,
  kMoeChunkIds,
  kMatmulHeads,
  kMlaLatentStore,
};
const char* op_name(Op op);

struct RmsNormParams {
  float eps = 1e-6f;
  // false: out = x / rms(x) * w.  true (zero-centred): out = x / rms(x) * (1 + w), 1 + w formed in fp32.
  bool zero_centered = false;
};

struct RopeParams {
  int64_t rot_dim = 0;        // leading dims of each head that rotate (partial rotary); the rest pass through
  bool interleaved = false;   // false: rotate-half pairs (i, i + rot_dim/2); true: pairs (2i, 2i+1)
  float attention_factor = 1.0f;  // cos and sin are multiplied by this (YaRN mscale)
};

// Paged KV layout: cache [n_pages, page_size, n_kv_head, head_dim]; a token at position p of a
// sequence lives in page page_table[s][p / page_size], row p % page_size.
struct PagedAttentionMeta {
  Tensor q_start;     // [n_seq + 1] i32: first row of each sequence in q (q_start[n_seq] = n_tokens)
  Tensor kv_len;      // [n_seq] i32: tokens cached for the sequence once this batch's keys are stored
  Tensor page_table;  // [n_seq, max_pages] i32
  int64_t n_seq = 0;
  int64_t page_size = 0;
};

struct AttentionParams {
  float scale = 1.0f;  // applied to q.k
  int64_t window = 0;  // sliding window: a query at position p sees keys in (p - window, p]; 0 = unlimited
  Tensor sinks;        // optional [n_head] f32/bf16: a per-head logit that joins the softmax denominator
};

// The experts' activation h = f(gate, up), gate and up being an expert's gate and up rows times x (plus their bias).
struct ExpertActivation {
  enum Kind : int32_t {
    kSwiglu,         // silu(gate) * up
    kClampedSwiglu,  // gpt-oss: g = min(gate, limit), u = clamp(up, -limit, limit), (u + 1) * g * sigmoid(alpha * g)
  };
  Kind kind = kSwiglu;
  float alpha = 1.702f, limit = 7.0f;  // kClampedSwiglu's
};

// What moe_experts applies beside the weights: the activation, each expert's biases (in the expert weights' dtype; f32
// or bf16 beside MXFP4 weights) and, for MXFP4 weights, their scales; the expert dim may be strided as the weights' is
// (the records of an expert store or cache).
struct MoeExpertParams {
  ExpertActivation act;
  Tensor gate_up_bias;  // [n_expert, 2 * inter] (gate's, then up's) or undefined
  Tensor down_bias;     // [n_expert, d] or undefined
  // MXFP4 experts (io/mxfp4.h: gate_up and down f4_e2m1, a weight being its code times the ue8m0 scale of its group
  // of 32 along the row): gate_up's scales [n_expert, 2 * inter, d / 32] and down's [n_expert, d, inter / 32]
  // (contiguous along their rows); undefined for other weights.
  Tensor gate_up_scales;
  Tensor down_scales;
  // gate_up's rows, and its scales' and bias's, alternate gate and up (row 2i gate's row i, 2i + 1 up's: the order of
  // gpt-oss's checkpoints, which a host backend then reads in place) instead of gate's rows, then up's.
  bool gate_up_interleaved = false;
};

enum class RouterScoring { kSoftmax, kSigmoid };

struct MoeRouteParams {
  RouterScoring scoring = RouterScoring::kSoftmax;
  int64_t n_expert_used = 1;  // k
  int64_t n_group = 1;        // grouped top-k (DeepSeek): experts split into n_group groups ...
  int64_t topk_group = 1;     // ... of which the topk_group best (sum of each group's top-2 biased scores) compete
  bool norm_topk = false;     // renormalise the k weights to sum 1
  float scale = 1.0f;         // routed_scaling_factor applied to the final weights
};

// Per-sequence recurrent state of linear-attention layers (Gated DeltaNet). Sequence s of the batch owns rows
// q_start[s] .. q_start[s+1] and state slot state_slots[s]; it starts from a zero state when kv_len[s] equals its
// row count (the batch holds its first tokens), else from the slot's state. The ops write the final state back.
struct RecurrentMeta {
  Tensor q_start;      // [n_seq + 1] i32
  Tensor kv_len;       // [n_seq] i32: the sequence's tokens once this batch is processed
  Tensor state_slots;  // [n_seq] i32
  int64_t n_seq = 0;
};

// Gated delta rule gates, per value head: g = -exp(a_log) * softplus(a + dt_bias), beta = sigmoid(b).
struct GatedDeltaParams {
  Tensor a_log;    // [n_v_head] f32/bf16
  Tensor dt_bias;  // [n_v_head] f32/bf16
  float l2_eps = 1e-6f;  // q and k rows: x / sqrt(sum(x^2) + l2_eps)
};

// Expert cache bookkeeping: one pool of n_slots device slots shared by every MoE layer, an exact LRU over them.
// A key names one expert of one layer: moe_layer * n_expert + expert.
struct ExpertCacheTables {
  Tensor slot_of;    // [n_keys] i32: key -> slot, -1 when not resident
  Tensor key_of;     // [n_slots] i32: slot -> key, -1 when free
  Tensor lru;        // [2, n_slots + 1] i32: prev (row 0) and next (row 1) links of a ring through the sentinel
                     // n_slots; next[sentinel] is the most recently used slot, prev[sentinel] the least
  Tensor mark;       // [n_keys] i64: the lookup that last saw each key (deduplication)
  Tensor calls;      // [1] i64: lookups so far
  Tensor share;      // [1] f32: fraction of a lookup's misses fetched into slots; the rest is left to the CPU
  Tensor stats;      // [n_moe_layers, 3] i64: distinct experts per lookup that hit, were fetched, were left to the CPU
  Tensor miss_keys;  // [max pairs] i32 scratch
};

struct MoeCacheLookupParams {
  int64_t moe_layer = 0;
  int64_t n_expert = 0;
};

struct OpTable {
  const char* name;
  bool (*supports)(Op op, DType act, DType weight);

  // out[i, :] = table[ids[i], :].  table [n_rows, d] any float; ids [n] i32; out [n, d] act.
  Status (*embedding)(const Tensor& table, const Tensor& ids, const Tensor& out, Stream& s);
  // out = x @ w^T (+ bias).  x [n, k] act; w [m, k]; bias [m] or undefined; out [n, m] act.
  Status (*matmul)(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out, Stream& s);
  // Normalises each innermost row.  x [..., d] act; w [d]; out like x (may alias x).
  Status (*rms_norm)(const Tensor& x, const Tensor& w, const Tensor& out, const RmsNormParams& p, Stream& s);
  // The residual update, the norm and the projection that reads the normed rows: x_out = x + delta, each element
  // rounded to x's dtype, h = rms_norm(x_out) * w, out = h @ proj^T (+ bias); equals add(x, delta, x_out),
  // rms_norm(x_out, w, h, p), matmul(h, proj, bias, out) up to the order of the sums. With delta undefined (x_out
  // undefined too) h = rms_norm(x) * w. x [n, d] act; delta, x_out, h like x; w [d]; proj [m, d]; bias [m] or
  // undefined; out [n, m] act or f32. x_out, h and out overlap neither each other nor x or delta.
  Status (*add_rms_norm_matmul)(const Tensor& x, const Tensor& delta, const Tensor& w, const Tensor& x_out,
                                const Tensor& h, const Tensor& proj, const Tensor& bias, const Tensor& out,
                                const RmsNormParams& p, Stream& s);
  // x [n, n_head, head_dim] act; positions [n] i32; inv_freq [rot_dim / 2] f32; out like x (may alias).
  // angle = f32(position) * inv_freq in f32 (as transformers forms it), then cos and sin.
  Status (*rope)(const Tensor& x, const Tensor& positions, const Tensor& inv_freq, const Tensor& out,
                 const RopeParams& p, Stream& s);
  // Attention's inputs in one op: per-head RMSNorm of q and k (where q_w and k_w are given), then rope, in place, then
  // k and v into the paged cache. Equals rms_norm(q, q_w, q, norm), rms_norm(k, k_w, k, norm), rope(q, positions,
  // inv_freq, q, rope), rope(k, positions, inv_freq, k, rope), kv_store(k, v, slots, k_cache, v_cache), without the
  // norms when q_w and k_w are undefined: each head row is rounded to q's dtype after its norm, before it rotates.
  // q [n, n_head, hd] act; k [n, n_kv, hd], v [n, n_kv, hd_v], q's dtype; q_w, k_w [hd], one dtype, or both
  // undefined; positions, slots [n] i32; inv_freq [rot_dim / 2] f32; caches as kv_store's.
  Status (*qk_norm_rope_store)(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_w,
                               const Tensor& k_w, const Tensor& positions, const Tensor& inv_freq, const Tensor& slots,
                               const Tensor& k_cache, const Tensor& v_cache, const RmsNormParams& norm,
                               const RopeParams& rope, Stream& s);
  // out = silu(gate) * up.  gate, up, out [n, i] act (gate/up may be column slices of one tensor).
  Status (*swiglu)(const Tensor& gate, const Tensor& up, const Tensor& out, Stream& s);
  // Row softmax.  x, out [n, m] (may alias).
  Status (*softmax)(const Tensor& x, const Tensor& out, Stream& s);
  // out = a + b, same shapes (may alias).
  Status (*add)(const Tensor& a, const Tensor& b, const Tensor& out, Stream& s);
  // out = x converted to out's dtype, same shapes.
  Status (*convert)(const Tensor& x, const Tensor& out, Stream& s);
  // Stores this batch's keys and values: k [n, n_kv, hd_k], v [n, n_kv, hd_v]; slots [n] i32 (page * page_size
  // + row); k_cache [n_pages, page_size, n_kv, hd_k], v_cache [n_pages, page_size, n_kv, hd_v]. v and v_cache both
  // undefined: the keys only (a cache whose values are its keys' leading dims, KvLayerShape::values_in_keys).
  Status (*kv_store)(const Tensor& k, const Tensor& v, const Tensor& slots, const Tensor& k_cache,
                     const Tensor& v_cache, Stream& s);
  // Causal GQA attention over the paged cache (prefill and decode alike). q [n, n_head, hd_k];
  // out [n, n_head, hd_v]; head h reads kv head h / (n_head / n_kv). Query row i of sequence s sits at
  // position kv_len[s] - (q_start[s+1] - q_start[s]) + (i - q_start[s]). v_cache may be a view of k_cache's leading
  // hd_v dims (the latent cache of multi-head latent attention: k_cache.slice(3, 0, hd_v)).
  Status (*attention)(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      const PagedAttentionMeta& meta, const Tensor& out, const AttentionParams& p, Stream& s);
  // Top-k expert choice.  logits [n, n_expert]; bias [n_expert] f32 or undefined (selection only);
  // ids [n, k] i32; weights [n, k] f32.
  Status (*moe_route)(const Tensor& logits, const Tensor& bias, const Tensor& ids, const Tensor& weights,
                      const MoeRouteParams& p, Stream& s);
  // out[t] = sum_j weights[t, j] * (down[e] @ act(gate[e] @ x[t] + bg[e], up[e] @ x[t] + bu[e]) + bd[e]),
  // e = ids[t, j], act and the biases bg, bu, bd (zero when undefined) from p; a pair whose id is -1 contributes
  // nothing (it is computed elsewhere).
  // x [n, d] act; ids, weights [n, k]; gate_up [n_expert, 2 * inter, d] (gate rows, then up rows);
  // down [n_expert, d, inter] (both f4_e2m1 with p's scales where supports(kMoeExperts, act, kF4E2M1)); out [n, d]
  // act; workspace bytes from moe_workspace_bytes. The expert dim may be strided (the records of an expert store or
  // cache: gate_up and down views of one [n_expert, R] array).
  Status (*moe_experts)(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                        const Tensor& down, const Tensor& out, const Tensor& workspace, const MoeExpertParams& p,
                        Stream& s);
  size_t (*moe_workspace_bytes)(int64_t n_tokens, int64_t n_expert_used, int64_t d, int64_t inter);
  // Causal depthwise conv1d with a rolling state, then SiLU (prefill chunks and one-token steps alike).
  // x [n, c] act; w [c, kernel]; state [n_slots, kernel - 1, c] f32: the sequence's last kernel - 1 inputs, read
  // and updated; out [n, c] act (must not alias x). With xx = the state rows then the sequence's rows of x,
  // out[t, ch] = silu(sum_j w[ch, j] * xx[t + j, ch]).
  Status (*conv1d_silu)(const Tensor& x, const Tensor& w, const RecurrentMeta& meta, const Tensor& state,
                        const Tensor& out, Stream& s);
  // Gated delta rule over each sequence's rows, state [n_slots, n_v_head, dk, dv] f32 kept in fp32:
  // S = exp(g_t) S;  S += k_t (beta_t (v_t - S^T k_t))^T;  out_t = S^T q_t, with q and k l2-normalised and q
  // scaled by dk^-1/2. q, k [n, n_k_head, dk] act; v [n, n_v_head, dv] act; a, b [n, n_v_head] act (the gates'
  // inputs, see GatedDeltaParams); out [n, n_v_head, dv] act; value head h reads q/k head h / (n_v / n_k).
  // The chunked form (chunks of 64, WY/UT transform) is for prefill; the step form runs token by token.
  Status (*gated_delta_chunked)(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a,
                                const Tensor& b, const RecurrentMeta& meta, const Tensor& state, const Tensor& out,
                                const GatedDeltaParams& p, Stream& s);
  Status (*gated_delta_step)(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a, const Tensor& b,
                             const RecurrentMeta& meta, const Tensor& state, const Tensor& out,
                             const GatedDeltaParams& p, Stream& s);
  // out = x / rms(x) * w * silu(z) per innermost row (w is not zero-centred).  x [..., d] act; w [d];
  // z like x; out like x (may alias x).
  Status (*rms_norm_gated)(const Tensor& x, const Tensor& w, const Tensor& z, const Tensor& out, float eps,
                           Stream& s);
  // out = x * sigmoid(gate).  x [..., d] act; gate [..., d] or [..., 1] (one gate per row) act; out like x
  // (may alias x).
  Status (*sigmoid_mul)(const Tensor& x, const Tensor& gate, const Tensor& out, Stream& s);
  // One token per row of logits [n, vocab] f32. params [n, 5] f32 per row: temperature (<= 0: greedy), top_k (0:
  // off), top_p (1: off), min_p (0: off), u (a uniform draw in [0, 1)). Greedy (temperature <= 0 or top_k 1) takes
  // the argmax (ties: lower id). Otherwise the tokens by descending logit (ties: lower id first) are cut to the
  // top_k, then to the smallest prefix whose probability (softmax(logits / temperature) over the top_k) reaches
  // top_p, then to those with probability >= min_p times the largest; the draw walks the kept tokens in id order
  // and takes the first whose cumulative renormalised probability exceeds u. ids [n] i32; logprobs [n, 1 + n_top]
  // f32: log_softmax(logits)[id], then the n_top most likely tokens' (ties: lower id); top_ids [n, n_top] i32
  // (n_top = logprobs.dim(1) - 1 >= 0; undefined when 0).
  Status (*sample)(const Tensor& logits, const Tensor& params, const Tensor& ids, const Tensor& logprobs,
                   const Tensor& top_ids, Stream& s);
  // Makes the experts of moe layer p.moe_layer that ids [n, k] i32 name resident, on the device and without a host
  // round trip. In order of first appearance: every distinct key that is resident (a hit) moves to the most recent
  // end of the LRU; then the first round(share * m) of the m distinct misses each take the least recently used slot
  // (evicting its key; never a slot this lookup uses) and move to the most recent end; the other misses stay where
  // they are (host memory). slot_ids [n, k] i32: each pair's slot, -1 when not resident; cpu_ids [n, k] i32: the
  // expert id of pairs left to the CPU, else -1; fills [1 + n k] i32: the count of fetched keys, then their slots
  // (copy them with moe_cache_fill). Invalid ids (outside [0, n_expert)) give -1 in both. Needs min(n k, n_expert)
  // <= n_slots (the most distinct experts one lookup can name).
  Status (*moe_cache_lookup)(const Tensor& ids, const ExpertCacheTables& tables, const Tensor& slot_ids,
                             const Tensor& cpu_ids, const Tensor& fills, const MoeCacheLookupParams& p, Stream& s);
  // For each of the fills[0] slots in fills[1..]: dst[slot, :] = src[key_of[slot], :]. src [n_keys, R] u8 (host
  // memory the device can read: the expert store); dst [n_slots, R] u8 (the slot pool). timing [4] i64 or
  // undefined: timing[0] += the nanoseconds the copy took (the device's clock: from its start to its last byte);
  // timing[1..3] is the op's scratch, zero between calls (zero all four to start).
  Status (*moe_cache_fill)(const Tensor& src, const Tensor& dst, const Tensor& fills, const Tensor& key_of,
                           const Tensor& timing, Stream& s);
  // out = ids - first where first <= ids < first + count, else -1 (the pairs of one chunk of experts).
  // ids, out [n, k] i32.
  Status (*moe_chunk_ids)(const Tensor& ids, int64_t first, int64_t count, const Tensor& out, Stream& s);
  // Per-head projections: out[t, h, :] = x[t, h, :] @ w[h]^T (multi-head latent attention's absorbed kv_b_proj).
  // x [n, H, k] act; w [H, m, k] (its head dim may be strided: views of one projection's rows); out [n, H, m] act.
  Status (*matmul_heads)(const Tensor& x, const Tensor& w, const Tensor& out, Stream& s);
  // Multi-head latent attention's cache row and query rope in one op: each token's key row [latent | rope key] with the
  // latent normalised (norm_w, norm) and the rope key rotated, both in place, then stored (kv_store, keys only), and
  // the query heads' rope dims rotated into q_out. Equals rms_norm(keys[..., :kv_lora], norm_w), rope(keys[...,
  // kv_lora:]), kv_store(keys, -, slots, k_cache, -), rope(q_rope -> q_out). keys [n, 1, kv_lora + rot_dim] act;
  // norm_w [kv_lora]; q_rope, q_out [n, H, rot_dim], keys' dtype; positions, slots [n] i32; inv_freq [rot_dim / 2]
  // f32; k_cache [n_pages, page_size, 1, kv_lora + rot_dim]. ref and cpu run those ops (composed_ops.h).
  Status (*mla_latent_store)(const Tensor& keys, const Tensor& norm_w, const Tensor& q_rope, const Tensor& q_out,
                             const Tensor& positions, const Tensor& inv_freq, const Tensor& slots,
                             const Tensor& k_cache, const RmsNormParams& norm, const RopeParams& rope, Stream& s);
};

// Declares op `name` in the enclosing (backend) namespace with exactly the OpTable signature, so the
// backends' signatures cannot drift apart: ft::cpu::matmul has the type of *OpTable::matmul.
#define FT_DECLARE_OP(name) std::remove_pointer_t<decltype(::ft::OpTable::name)> name;
// Every op of the table; a backend header says `namespace cpu { FT_DECLARE_OPS() }`. A backend defines
// the ops it runs; its table leaves the others null.
// clang-format off
#define FT_DECLARE_OPS()                                                                               \
  FT_DECLARE_OP(embedding) FT_DECLARE_OP(matmul) FT_DECLARE_OP(rms_norm)                               \
  FT_DECLARE_OP(add_rms_norm_matmul) FT_DECLARE_OP(rope) FT_DECLARE_OP(qk_norm_rope_store)             \
  FT_DECLARE_OP(swiglu) FT_DECLARE_OP(softmax) FT_DECLARE_OP(add) FT_DECLARE_OP(convert)               \
  FT_DECLARE_OP(kv_store) FT_DECLARE_OP(attention) FT_DECLARE_OP(moe_route) FT_DECLARE_OP(moe_experts) \
  FT_DECLARE_OP(moe_workspace_bytes) FT_DECLARE_OP(conv1d_silu) FT_DECLARE_OP(gated_delta_chunked)     \
  FT_DECLARE_OP(gated_delta_step) FT_DECLARE_OP(rms_norm_gated) FT_DECLARE_OP(sigmoid_mul)             \
  FT_DECLARE_OP(sample) FT_DECLARE_OP(moe_cache_lookup) FT_DECLARE_OP(moe_cache_fill)                  \
  FT_DECLARE_OP(moe_chunk_ids) FT_DECLARE_OP(matmul_heads) FT_DECLARE_OP(mla_latent_store)
// clang-format on

}  // namespace ft
