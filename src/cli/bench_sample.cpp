// ft bench sample: the sample op alone (what a decode step adds after its logits) over random logits, for the
// sampling settings clients send: greedy, the OpenAI and Anthropic default (temperature 1), Qwen3's recommended
// top-k / top-p settings, top-p or min-p alone, and top logprobs.
#include "cli/bench_sample.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "backend/backend.h"

namespace ft::cli {
namespace {

struct Setting {
  const char* name;
  float temperature, top_k, top_p, min_p;
  int64_t n_top;
};

constexpr Setting kSettings[] = {
    {"greedy", 0.0f, 0, 1.0f, 0.0f, 0},
    {"greedy, 20 top logprobs", 0.0f, 0, 1.0f, 0.0f, 20},
    {"temperature 1", 1.0f, 0, 1.0f, 0.0f, 0},
    {"t 0.7, top-k 20, top-p 0.8 (Qwen3)", 0.7f, 20, 0.8f, 0.0f, 0},
    {"t 0.6, top-k 20, top-p 0.95 (Qwen3 thinking)", 0.6f, 20, 0.95f, 0.0f, 0},
    {"t 1, top-p 0.95", 1.0f, 0, 0.95f, 0.0f, 0},
    {"t 1, top-p 0.95, 5 top logprobs", 1.0f, 0, 0.95f, 0.0f, 5},
    {"t 1, min-p 0.05", 1.0f, 0, 1.0f, 0.05f, 0},
};

Result<Tensor> upload(Backend& be, std::vector<float>& host, std::initializer_list<int64_t> shape) {
  FT_ASSIGN_OR_RETURN(Tensor t, be.empty(DType::kF32, shape));
  FT_RETURN_IF_ERROR(be.copy(Tensor::make(DType::kF32, shape, wrap_host(host.data(), host.size() * 4, nullptr)), t));
  FT_RETURN_IF_ERROR(be.stream().synchronize());
  return t;
}

}  // namespace

Status bench_sample(const Args& a) {
  FT_ASSIGN_OR_RETURN(int64_t rows, a.integer("batch", 1, 1024));
  FT_ASSIGN_OR_RETURN(int64_t vocab, a.integer("vocab", 1, int64_t{1} << 24));
  FT_ASSIGN_OR_RETURN(int64_t iters, a.integer("iters", 1));
  FT_ASSIGN_OR_RETURN(double scale, a.number("scale"));
  FT_ASSIGN_OR_RETURN(auto be, create_backend(a.str("device")));
  if (!be->ops().sample) return unsupported(std::string("sample op on ") + be->name());
  // Logits: Normal(0, scale); u spread over [0, 1) across rows.
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal(0.0f, static_cast<float>(scale));
  std::vector<float> logits(static_cast<size_t>(rows * vocab));
  for (float& l : logits) l = normal(rng);
  FT_ASSIGN_OR_RETURN(Tensor d_logits, upload(*be, logits, {rows, vocab}));
  FT_ASSIGN_OR_RETURN(Tensor ids, be->empty(DType::kI32, {rows}));
  std::printf("sample op on %s: %lld rows of %lld logits ~ Normal(0, %.1f), mean of %lld calls\n", be->name(),
              static_cast<long long>(rows), static_cast<long long>(vocab), scale, static_cast<long long>(iters));
  for (const Setting& s : kSettings) {
    std::vector<float> params;
    for (int64_t r = 0; r < rows; ++r)
      params.insert(params.end(), {s.temperature, s.top_k, s.top_p, s.min_p,
                                   std::fmod(0.137f + 0.618034f * static_cast<float>(r), 1.0f)});
    FT_ASSIGN_OR_RETURN(Tensor d_params, upload(*be, params, {rows, 5}));
    FT_ASSIGN_OR_RETURN(Tensor lp, be->empty(DType::kF32, {rows, 1 + s.n_top}));
    Tensor top;
    if (s.n_top) {
      FT_ASSIGN_OR_RETURN(top, be->empty(DType::kI32, {rows, s.n_top}));
    }
    auto call = [&] { return be->ops().sample(d_logits, d_params, ids, lp, top, be->stream()); };
    FT_RETURN_IF_ERROR(call());  // warm-up
    FT_RETURN_IF_ERROR(be->stream().synchronize());
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iters; ++i) FT_RETURN_IF_ERROR(call());
    FT_RETURN_IF_ERROR(be->stream().synchronize());
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    std::printf("  %-46s %9.1f us a call\n", s.name, us / static_cast<double>(iters));
  }
  return ok_status();
}

}  // namespace ft::cli
