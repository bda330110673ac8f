// Reference linear-attention ops: causal conv1d with state, the gated delta rule (token by token, float64), the
// gated RMSNorm and sigmoid gating.
#include <cmath>
#include <vector>

#include "backend/ref/ref_access.h"
#include "backend/ref/ref_ops.h"

namespace ft::ref {
namespace {

double silu(double x) { return x / (1.0 + std::exp(-x)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }  // torch's threshold 20

struct SeqRange {
  int64_t begin, end, slot;
  bool fresh;  // the batch holds the sequence's first tokens: start from a zero state
};

Status seq_ranges(const RecurrentMeta& m, int64_t n_rows, int64_t n_slots, std::vector<SeqRange>& out) {
  if (get_int(m.q_start, 0) != 0 || get_int(m.q_start, m.n_seq) != n_rows)
    return invalid_argument("recurrent meta: q_start does not cover the rows");
  for (int64_t s = 0; s < m.n_seq; ++s) {
    const int64_t b = get_int(m.q_start, s), e = get_int(m.q_start, s + 1), slot = get_int(m.state_slots, s);
    if (e < b || slot < 0 || slot >= n_slots) return invalid_argument("recurrent meta: bad sequence or slot");
    out.push_back({b, e, slot, get_int(m.kv_len, s) == e - b});
  }
  return ok_status();
}

}  // namespace

Status conv1d_silu(const Tensor& x, const Tensor& w, const RecurrentMeta& meta, const Tensor& state,
                   const Tensor& out, Stream&) {
  const int64_t c = x.dim(1), kernel = w.dim(1), hist = kernel - 1;
  if (w.dim(0) != c || state.dim(1) != hist || state.dim(2) != c || !same_shape(x, out))
    return invalid_argument("conv1d_silu: shapes");
  std::vector<SeqRange> seqs;
  FT_RETURN_IF_ERROR(seq_ranges(meta, x.dim(0), state.dim(0), seqs));
  for (const auto& sq : seqs) {
    const int64_t len = sq.end - sq.begin;
    for (int64_t ch = 0; ch < c; ++ch) {
      std::vector<double> xx(static_cast<size_t>(hist + len));
      for (int64_t j = 0; j < hist; ++j) xx[j] = sq.fresh ? 0.0 : get(state, sq.slot, j, ch);
      for (int64_t t = 0; t < len; ++t) xx[hist + t] = get(x, sq.begin + t, ch);
      for (int64_t t = 0; t < len; ++t) {
        double acc = 0;
        for (int64_t j = 0; j < kernel; ++j) acc += get(w, ch, j) * xx[t + j];
        set(out, silu(acc), sq.begin + t, ch);
      }
      for (int64_t j = 0; j < hist; ++j) set(state, xx[len + j], sq.slot, j, ch);
    }
  }
  return ok_status();
}

Status gated_delta_chunked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a, const Tensor& b,
                           const RecurrentMeta& meta, const Tensor& state, const Tensor& out,
                           const GatedDeltaParams& p, Stream& s) {
  // The chunked form is an exact rearrangement of the recurrence: the reference runs the recurrence.
  return gated_delta_step(q, k, v, a, b, meta, state, out, p, s);
}

Status gated_delta_step(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a, const Tensor& b,
                        const RecurrentMeta& meta, const Tensor& state, const Tensor& out,
                        const GatedDeltaParams& p, Stream&) {
  const int64_t n_k = q.dim(1), dk = q.dim(2), n_v = v.dim(1), dv = v.dim(2);
  if (!same_shape(q, k) || n_v % n_k != 0 || !same_shape(v, out) || a.dim(1) != n_v || b.dim(1) != n_v ||
      state.dim(1) != n_v || state.dim(2) != dk || state.dim(3) != dv)
    return invalid_argument("gated_delta: shapes");
  std::vector<SeqRange> seqs;
  FT_RETURN_IF_ERROR(seq_ranges(meta, q.dim(0), state.dim(0), seqs));
  const double eps = p.l2_eps, scale = 1.0 / std::sqrt(static_cast<double>(dk));
  std::vector<double> S(static_cast<size_t>(dk * dv)), qn(static_cast<size_t>(dk)), kn(static_cast<size_t>(dk));
  for (const auto& sq : seqs)
    for (int64_t h = 0; h < n_v; ++h) {
      const int64_t hk = h / (n_v / n_k);
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j) S[i * dv + j] = sq.fresh ? 0.0 : get(state, sq.slot, h, i, j);
      for (int64_t t = sq.begin; t < sq.end; ++t) {
        double qq = 0, kk = 0;
        for (int64_t i = 0; i < dk; ++i) {
          qn[i] = get(q, t, hk, i), kn[i] = get(k, t, hk, i);
          qq += qn[i] * qn[i], kk += kn[i] * kn[i];
        }
        const double qs = scale / std::sqrt(qq + eps), ks = 1.0 / std::sqrt(kk + eps);
        for (int64_t i = 0; i < dk; ++i) qn[i] *= qs, kn[i] *= ks;
        const double g = -std::exp(get(p.a_log, h)) * softplus(get(a, t, h) + get(p.dt_bias, h));
        const double decay = std::exp(g), beta = sigmoid(get(b, t, h));
        for (double& e : S) e *= decay;
        for (int64_t j = 0; j < dv; ++j) {
          double mem = 0;
          for (int64_t i = 0; i < dk; ++i) mem += S[i * dv + j] * kn[i];
          const double delta = (get(v, t, h, j) - mem) * beta;
          for (int64_t i = 0; i < dk; ++i) S[i * dv + j] += kn[i] * delta;
        }
        for (int64_t j = 0; j < dv; ++j) {
          double o = 0;
          for (int64_t i = 0; i < dk; ++i) o += S[i * dv + j] * qn[i];
          set(out, o, t, h, j);
        }
      }
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j) set(state, S[i * dv + j], sq.slot, h, i, j);
    }
  return ok_status();
}

Status rms_norm_gated(const Tensor& x, const Tensor& w, const Tensor& z, const Tensor& out, float eps, Stream&) {
  const int64_t d = x.dim(-1), rows = x.n_rows();
  if (w.dim(0) != d || !same_shape(x, z) || !same_shape(x, out)) return invalid_argument("rms_norm_gated: shapes");
  std::vector<double> row(static_cast<size_t>(d));
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < d; ++j) ss += (row[j] = get_row(x, r, j)) * row[j];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(d) + static_cast<double>(eps));
    for (int64_t j = 0; j < d; ++j) set_row(out, r, j, row[j] * inv * get(w, j) * silu(get_row(z, r, j)));
  }
  return ok_status();
}

Status sigmoid_mul(const Tensor& x, const Tensor& gate, const Tensor& out, Stream&) {
  const int64_t d = x.dim(-1), rows = x.n_rows();
  const bool per_row = gate.dim(-1) == 1;
  if (!same_shape(x, out) || gate.n_rows() != rows || (!per_row && gate.dim(-1) != d))
    return invalid_argument("sigmoid_mul: shapes");
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < d; ++j)
      set_row(out, r, j, get_row(x, r, j) * sigmoid(get_row(gate, r, per_row ? 0 : j)));
  return ok_status();
}

}  // namespace ft::ref
