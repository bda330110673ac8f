// Bandwidth measurements: each one warms up once, then times several repetitions end to end (the best of a few such
// trials for the device's own copies).
#include "moe/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

namespace ft {
namespace {

using Clock = std::chrono::steady_clock;

// GB/s of `reps` repetitions timed together, the best of `trials` such timings.
template <class F>
Result<double> timed_gbps(Backend& be, double bytes_per_rep, int reps, F&& rep, int trials = 1) {
  FT_RETURN_IF_ERROR(rep(0));
  FT_RETURN_IF_ERROR(be.stream().synchronize());
  double best = 0;
  for (int t = 0; t < trials; ++t) {
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) FT_RETURN_IF_ERROR(rep(i));
    FT_RETURN_IF_ERROR(be.stream().synchronize());
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, bytes_per_rep * reps / s / 1e9);
  }
  return best;
}

// A store of n_records records with random bf16/f32 weights, pinned for `device` when given.
Result<std::unique_ptr<ExpertStore>> random_store(const ExpertShape& shape, int64_t n_records) {
  ExpertShape s = shape;
  s.n_layers = 1;
  s.n_expert = n_records;
  FT_ASSIGN_OR_RETURN(auto store, ExpertStore::create(s));
  std::mt19937 rng(7);
  auto* p = static_cast<uint16_t*>(store->record(0, 0));
  const size_t n = store->bytes() / 2;
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint16_t>(0x3c00 | (rng() & 0x00ff) | ((rng() & 1) << 15));
  return store;
}

}  // namespace

Result<double> measure_h2d_copy(Backend& device, size_t bytes) {
  FT_ASSIGN_OR_RETURN(Tensor host, Tensor::host(DType::kU8, {static_cast<int64_t>(bytes)}));
  FT_ASSIGN_OR_RETURN(auto pinned, device.map_host(host.data(), bytes));
  FT_ASSIGN_OR_RETURN(Tensor dst, device.empty(DType::kU8, {static_cast<int64_t>(bytes)}));
  return timed_gbps(device, static_cast<double>(bytes), 10, [&](int) { return device.copy(host, dst); });
}

Result<double> measure_h2d_fill(Backend& device, const ExpertShape& shape, int64_t n_records) {
  FT_ASSIGN_OR_RETURN(auto store, random_store(shape, n_records));
  FT_RETURN_IF_ERROR(store->pin(device));
  const int64_t R = static_cast<int64_t>(store->record_bytes());
  FT_ASSIGN_OR_RETURN(Tensor slots, device.empty(DType::kU8, {n_records, R}));
  FT_ASSIGN_OR_RETURN(Tensor key_of, Tensor::host(DType::kI32, {n_records}));
  FT_ASSIGN_OR_RETURN(Tensor fills, Tensor::host(DType::kI32, {1 + n_records}));
  fills.ptr<int32_t>()[0] = static_cast<int32_t>(n_records);
  for (int64_t i = 0; i < n_records; ++i) {
    key_of.ptr<int32_t>()[i] = static_cast<int32_t>(n_records - 1 - i);
    fills.ptr<int32_t>()[1 + i] = static_cast<int32_t>(i);
  }
  FT_ASSIGN_OR_RETURN(Tensor d_key_of, device.empty(DType::kI32, {n_records}));
  FT_ASSIGN_OR_RETURN(Tensor d_fills, device.empty(DType::kI32, {1 + n_records}));
  FT_RETURN_IF_ERROR(device.copy(key_of, d_key_of));
  FT_RETURN_IF_ERROR(device.copy(fills, d_fills));
  return timed_gbps(device, static_cast<double>(n_records * R), 5, [&](int) {
    return device.ops().moe_cache_fill(store->device_records(), slots, d_fills, d_key_of, Tensor{}, device.stream());
  });
}

Result<double> measure_cpu_experts(const ExpertShape& shape, int64_t k, int64_t n_records, int threads) {
  BackendOptions bo;
  bo.n_threads = threads;
  FT_ASSIGN_OR_RETURN(auto cpu, create_backend("cpu", bo));
  FT_ASSIGN_OR_RETURN(auto store, random_store(shape, n_records));
  FT_ASSIGN_OR_RETURN(Tensor x, Tensor::host(DType::kF32, {1, shape.d}));
  FT_ASSIGN_OR_RETURN(Tensor out, Tensor::host(DType::kF32, {1, shape.d}));
  FT_ASSIGN_OR_RETURN(Tensor ids, Tensor::host(DType::kI32, {1, k}));
  FT_ASSIGN_OR_RETURN(Tensor w, Tensor::host(DType::kF32, {1, k}));
  FT_ASSIGN_OR_RETURN(Tensor ws, Tensor::host(DType::kU8, {static_cast<int64_t>(cpu->ops().moe_workspace_bytes(1, k, shape.d, shape.inter))}));
  for (int64_t i = 0; i < shape.d; ++i) x.ptr<float>()[i] = 0.01f * static_cast<float>(i % 7);
  for (int64_t j = 0; j < k; ++j) w.ptr<float>()[j] = 1.0f / static_cast<float>(k);
  const double bytes = static_cast<double>(k) * static_cast<double>(shape.weight_bytes());
  const int reps = 40;
  return timed_gbps(*cpu, bytes, reps, [&](int rep) {
    for (int64_t j = 0; j < k; ++j) ids.ptr<int32_t>()[j] = static_cast<int32_t>((rep * k + j) % n_records);
    return cpu->ops().moe_experts(x, ids, w, store->gate_up(0), store->down(0), out, ws, store->params(0),
                                  cpu->stream());
  });
}

Result<double> measure_device_copy(Backend& device, size_t bytes) {
  FT_ASSIGN_OR_RETURN(Tensor a, device.empty(DType::kU8, {static_cast<int64_t>(bytes)}));
  FT_ASSIGN_OR_RETURN(Tensor b, device.empty(DType::kU8, {static_cast<int64_t>(bytes)}));
  // The best of five: one timing ran up to 10% slow in some runs (H200: rooflines of 1564-1740 tok/s in the runs of
  // one call, docs/perf.md), and this figure is the ceiling a decode step is measured against.
  return timed_gbps(
      device, 2.0 * static_cast<double>(bytes), 10, [&](int i) { return device.copy(i % 2 ? b : a, i % 2 ? a : b); },
      5);
}

}  // namespace ft
