// Reference dense ops: embedding, matmul, norms, activations, elementwise.
#include <cmath>
#include <vector>

#include "backend/composed_ops.h"
#include "backend/ref/ref_access.h"
#include "backend/ref/ref_ops.h"

namespace ft::ref {

Status embedding(const Tensor& table, const Tensor& ids, const Tensor& out, Stream&) {
  const int64_t n = ids.dim(0), d = table.dim(1), n_rows = table.dim(0);
  if (out.dim(0) != n || out.dim(1) != d) return invalid_argument("embedding: out shape " + out.shape_string());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = get_int(ids, i);
    if (id < 0 || id >= n_rows) return invalid_argument("embedding: id " + std::to_string(id) + " out of range");
    for (int64_t j = 0; j < d; ++j) set(out, get(table, id, j), i, j);
  }
  return ok_status();
}

Status matmul(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out, Stream&) {
  const int64_t n = x.dim(0), k = x.dim(1), m = w.dim(0);
  if (w.dim(1) != k || out.dim(0) != n || out.dim(1) != m)
    return invalid_argument("matmul: x " + x.shape_string() + " w " + w.shape_string() + " out " + out.shape_string());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double acc = bias.defined() ? get(bias, j) : 0.0;
      for (int64_t c = 0; c < k; ++c) acc += get(x, i, c) * get(w, j, c);
      set(out, acc, i, j);
    }
  return ok_status();
}

Status matmul_heads(const Tensor& x, const Tensor& w, const Tensor& out, Stream&) {
  const int64_t n = x.dim(0), heads = x.dim(1), k = x.dim(2), m = w.dim(1);
  if (x.ndim != 3 || w.ndim != 3 || out.ndim != 3 || w.dim(0) != heads || w.dim(2) != k || out.dim(0) != n ||
      out.dim(1) != heads || out.dim(2) != m)
    return invalid_argument("matmul_heads: x " + x.shape_string() + " w " + w.shape_string() + " out " +
                            out.shape_string());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0.0;
        for (int64_t c = 0; c < k; ++c) acc += get(x, i, h, c) * get(w, h, j, c);
        set(out, acc, i, h, j);
      }
  return ok_status();
}

Status rms_norm(const Tensor& x, const Tensor& w, const Tensor& out, const RmsNormParams& p, Stream&) {
  const int64_t d = x.dim(-1), rows = x.n_rows();
  if (w.dim(0) != d || out.numel() != x.numel()) return invalid_argument("rms_norm: shapes");
  std::vector<double> row(static_cast<size_t>(d));
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < d; ++j) {
      row[j] = get_row(x, r, j);
      ss += row[j] * row[j];
    }
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(d) + static_cast<double>(p.eps));
    for (int64_t j = 0; j < d; ++j) {
      const double wj = get(w, j) + (p.zero_centered ? 1.0 : 0.0);
      set_row(out, r, j, row[j] * inv * wj);
    }
  }
  return ok_status();
}

Status add_rms_norm_matmul(const Tensor& x, const Tensor& delta, const Tensor& w, const Tensor& x_out, const Tensor& h,
                           const Tensor& proj, const Tensor& bias, const Tensor& out, const RmsNormParams& p,
                           Stream& s) {
  return add_rms_norm_matmul_in_turn(ref_op_table(), x, delta, w, x_out, h, proj, bias, out, p, s);
}

Status swiglu(const Tensor& gate, const Tensor& up, const Tensor& out, Stream&) {
  const int64_t n = gate.dim(0), m = gate.dim(1);
  if (!same_shape(gate, up) || !same_shape(gate, out)) return invalid_argument("swiglu: shapes");
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      const double g = get(gate, i, j);
      set(out, g / (1.0 + std::exp(-g)) * get(up, i, j), i, j);
    }
  return ok_status();
}

Status softmax(const Tensor& x, const Tensor& out, Stream&) {
  const int64_t n = x.dim(0), m = x.dim(1);
  if (!same_shape(x, out)) return invalid_argument("softmax: shapes");
  std::vector<double> row(static_cast<size_t>(m));
  for (int64_t i = 0; i < n; ++i) {
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < m; ++j) mx = std::max(mx, row[j] = get(x, i, j));
    for (int64_t j = 0; j < m; ++j) sum += (row[j] = std::exp(row[j] - mx));
    for (int64_t j = 0; j < m; ++j) set(out, row[j] / sum, i, j);
  }
  return ok_status();
}

Status add(const Tensor& a, const Tensor& b, const Tensor& out, Stream&) {
  if (!same_shape(a, b) || !same_shape(a, out)) return invalid_argument("add: shapes");
  const int64_t d = a.dim(-1), rows = a.n_rows();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < d; ++j) set_row(out, r, j, get_row(a, r, j) + get_row(b, r, j));
  return ok_status();
}

Status convert(const Tensor& x, const Tensor& out, Stream&) {
  if (!same_shape(x, out)) return invalid_argument("convert: shapes");
  const int64_t d = x.dim(-1), rows = x.n_rows();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < d; ++j) set_row(out, r, j, get_row(x, r, j));
  return ok_status();
}

}  // namespace ft::ref
