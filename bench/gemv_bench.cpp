// bf16 GEMV (n = 1, f32 x) and small GEMMs (n = 8, 64, 512) at Qwen3-30B-A3B shapes on the CPU backend.
// Every benchmark rotates through enough distinct weight matrices that the working set is at least four
// times the last-level cache, so a GEMV measures DRAM. The binary first measures the DRAM read bandwidth
// itself (a streaming read/sum over a buffer of the same size, with the same threads) and reports each
// GEMV's weight bytes / time as GB/s and as a share of that bandwidth; likewise for moe_experts at decode.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/kernels.h"
#include "core/check.h"

namespace ft {
namespace {

// FT_BENCH_THREADS threads (default: one per core).
ThreadPool& pool() {
  static ThreadPool p(std::getenv("FT_BENCH_THREADS") ? std::atoi(std::getenv("FT_BENCH_THREADS")) : 0);
  return p;
}

size_t llc_bytes() {
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return l3 > 0 ? static_cast<size_t>(l3) : size_t{64} << 20;
}

size_t working_set_bytes() { return 4 * llc_bytes(); }

Tensor host_tensor(DType dtype, std::initializer_list<int64_t> shape) {
  auto t = Tensor::host(dtype, shape);
  FT_CHECK(t.ok());
  return std::move(t).value();
}

// Small bf16 values from a cheap hash (no denormals, no NaN); writing them also faults every page in.
void fill_bf16(const Tensor& t) {
  uint16_t* p = t.ptr<uint16_t>();
  const int64_t n = t.numel();
  pool().parallel_for(n, [&](int, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] = f32_to_bf16(static_cast<float>((i * 2654435761u) >> 24 & 0xff) / 4096.0f - 0.03f);
  }, 1 << 16);
}

// Best of several passes of a multithreaded streaming read (vectorised sum of squares) over `bytes`.
double measure_dram_gbps(size_t bytes) {
  Tensor buf = host_tensor(DType::kF32, {static_cast<int64_t>(bytes / 4)});
  const int64_t n = buf.numel();
  float* p = buf.ptr<float>();
  pool().parallel_for(n, [&](int, int64_t b, int64_t e) { std::fill(p + b, p + e, 1.0f); }, 1 << 16);
  const cpu::CpuKernels& kn = cpu::kernels();
  double best = 0;
  std::vector<float> partial(static_cast<size_t>(pool().n_threads()));
  for (int pass = 0; pass < 6; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    pool().parallel_for(n, [&](int th, int64_t b, int64_t e) { partial[th] = kn.sum_squares(p + b, e - b); }, 1 << 16);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(partial.data());
    best = std::max(best, static_cast<double>(bytes) / s / 1e9);
  }
  return best;
}

double g_dram_gbps = 0;

// x [n, k] f32 times `copies` distinct weights [m, k] bf16, one per iteration in turn.
void bm_matmul(benchmark::State& state, int64_t m, int64_t k) {
  const int64_t n = state.range(0);
  const size_t matrix_bytes = static_cast<size_t>(m * k) * 2;
  const int64_t copies = static_cast<int64_t>((working_set_bytes() + matrix_bytes - 1) / matrix_bytes);
  Tensor w = host_tensor(DType::kBF16, {copies, m, k});
  fill_bf16(w);
  Tensor x = host_tensor(DType::kF32, {n, k}), out = host_tensor(DType::kF32, {n, m});
  for (int64_t i = 0; i < n * k; ++i) x.ptr<float>()[i] = static_cast<float>(i % 7) * 0.1f;
  HostStream stream(&pool());
  const OpTable& ops = cpu_op_table();
  int64_t c = 0;
  for (auto _ : state) {
    const Status st = ops.matmul(x, w.select(0, c), Tensor{}, out, stream);
    if (!st.ok()) state.SkipWithError(st.to_string().c_str());
    benchmark::DoNotOptimize(out.data());
    c = (c + 1) % copies;
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(iters * static_cast<double>(matrix_bytes) / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(iters * 2.0 * static_cast<double>(n * m * k) / 1e9, benchmark::Counter::kIsRate);
  state.counters["working_set_GB"] = static_cast<double>(copies) * static_cast<double>(matrix_bytes) / 1e9;
}

// moe_experts at decode (n tokens, 8 of 128 experts each, hidden 2048, intermediate 768): the CPU expert
// executor's work. Experts are drawn from enough layers' banks to exceed the working set; GB/s counts the
// weight bytes of the distinct experts each call reads.
void bm_moe_decode(benchmark::State& state) {
  constexpr int64_t kExperts = 128, kUsed = 8, kD = 2048, kInter = 768;
  const int64_t n = state.range(0);
  const size_t layer_bytes = static_cast<size_t>(kExperts * 3 * kInter * kD) * 2;
  const int64_t layers = static_cast<int64_t>((working_set_bytes() + layer_bytes - 1) / layer_bytes);
  Tensor gate_up = host_tensor(DType::kBF16, {layers * kExperts, 2 * kInter, kD});
  Tensor down = host_tensor(DType::kBF16, {layers * kExperts, kD, kInter});
  fill_bf16(gate_up), fill_bf16(down);
  Tensor x = host_tensor(DType::kF32, {n, kD}), out = host_tensor(DType::kF32, {n, kD});
  Tensor ids = host_tensor(DType::kI32, {n, kUsed}), weights = host_tensor(DType::kF32, {n, kUsed});
  const OpTable& ops = cpu_op_table();
  Tensor ws = host_tensor(DType::kU8, {static_cast<int64_t>(ops.moe_workspace_bytes(n, kUsed, kD, kInter))});
  for (int64_t i = 0; i < n * kD; ++i) x.ptr<float>()[i] = static_cast<float>(i % 7) * 0.1f;
  HostStream stream(&pool());
  uint64_t rng = 1, bytes = 0;
  for (int64_t call = 0; state.KeepRunningBatch(1); ++call) {
    state.PauseTiming();
    const int64_t layer = call % layers;
    std::vector<bool> seen(kExperts, false);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t j = 0; j < kUsed; ++j) {
        int64_t e;
        do {  // k distinct experts per token (xorshift)
          rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
          e = static_cast<int64_t>(rng % kExperts);
        } while (std::find(ids.ptr<int32_t>() + t * kUsed, ids.ptr<int32_t>() + t * kUsed + j, layer * kExperts + e) !=
                 ids.ptr<int32_t>() + t * kUsed + j);
        ids.ptr<int32_t>()[t * kUsed + j] = static_cast<int32_t>(layer * kExperts + e);
        weights.ptr<float>()[t * kUsed + j] = 0.125f;
        if (!seen[e]) bytes += static_cast<uint64_t>(3 * kInter * kD) * 2;
        seen[e] = true;
      }
    state.ResumeTiming();
    const Status st = ops.moe_experts(x, ids, weights, gate_up, down, out, ws, MoeExpertParams{}, stream);
    if (!st.ok()) state.SkipWithError(st.to_string().c_str());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) / 1e9, benchmark::Counter::kIsRate);
}

void bm_dram_read(benchmark::State& state) {
  for (auto _ : state) state.counters["GB/s"] = measure_dram_gbps(working_set_bytes());
}

// Adds "dram_share" (GB/s over the measured DRAM bandwidth) to every GEMV row of the console report.
class ShareReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> with_share = runs;
    for (Run& r : with_share) {
      auto it = r.counters.find("GB/s");
      if (it != r.counters.end() && g_dram_gbps > 0 && r.run_name.str().find("dram") == std::string::npos) {
        r.counters["dram_share"] = it->second.value / g_dram_gbps;  // rates are final when reported
      }
    }
    ConsoleReporter::ReportRuns(with_share);
  }
};

struct Shape {
  const char* name;
  int64_t m, k;
};

constexpr Shape kShapes[] = {
    {"expert_gate_up", 1536, 2048}, {"expert_down", 2048, 768}, {"attn_q", 4096, 2048},
    {"attn_kv", 512, 2048},         {"attn_o", 2048, 4096},
};

}  // namespace
}  // namespace ft

int main(int argc, char** argv) {
  using namespace ft;
  benchmark::Initialize(&argc, argv);
  g_dram_gbps = measure_dram_gbps(working_set_bytes());
  std::printf("isa %s, %d threads, LLC %.0f MiB, working set %.2f GB, measured DRAM read %.2f GB/s\n",
              cpu::isa_level_name(cpu::isa_level()), pool().n_threads(), static_cast<double>(llc_bytes()) / (1 << 20),
              static_cast<double>(working_set_bytes()) / 1e9, g_dram_gbps);
  benchmark::RegisterBenchmark("dram_read", bm_dram_read)->Iterations(1)->UseRealTime();
  for (const Shape& s : kShapes)
    benchmark::RegisterBenchmark((std::string("gemv_bf16/") + s.name).c_str(),
                                 [s](benchmark::State& st) { bm_matmul(st, s.m, s.k); })
        ->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("moe_decode_bf16/e128_k8", bm_moe_decode)
      ->Arg(1)->Arg(4)->UseRealTime()->Unit(benchmark::kMicrosecond);
  for (const Shape& s : {kShapes[0], kShapes[2]})
    benchmark::RegisterBenchmark((std::string("gemm_bf16/") + s.name).c_str(),
                                 [s](benchmark::State& st) { bm_matmul(st, s.m, s.k); })
        ->Arg(8)->Arg(64)->Arg(512)->UseRealTime()->Unit(benchmark::kMillisecond);
  ShareReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
