// ft bench decode: batched decode throughput with every weight resident, eager and as one replayed graph
// per step, against the device-to-device copy bandwidth it measures itself; optionally a per-op breakdown.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>

#include "cli/commands.h"
#include "cli/model_flags.h"
#include "cli/op_profiler.h"
#include "io/safetensors_archive.h"
#include "model/model.h"

namespace ft::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Bytes a device-to-device copy moves per second (read + write), over 2 x 1 GiB buffers.
Result<double> copy_bandwidth(Backend& be) {
  constexpr int64_t kBytes = int64_t{1} << 30;
  constexpr int kReps = 20;
  FT_ASSIGN_OR_RETURN(Tensor a, be.empty(DType::kU8, {kBytes}));
  FT_ASSIGN_OR_RETURN(Tensor b, be.empty(DType::kU8, {kBytes}));
  FT_RETURN_IF_ERROR(be.copy(a, b));
  FT_RETURN_IF_ERROR(be.stream().synchronize());
  const auto t0 = Clock::now();
  for (int i = 0; i < kReps; ++i) FT_RETURN_IF_ERROR(be.copy(i % 2 ? b : a, i % 2 ? a : b));
  FT_RETURN_IF_ERROR(be.stream().synchronize());
  return 2.0 * static_cast<double>(kBytes) * kReps / seconds_since(t0);
}

// Weight bytes one decode step of `batch` tokens reads: everything but the embedding table (batch rows of
// it) and the experts no token picks; with uniform routing a step touches E (1 - (1 - k/E)^batch) experts.
double weight_bytes_per_step(const SafetensorsArchive& ckpt, const ModelConfig& c, int64_t batch) {
  double dense = 0, experts = 0, embed_row = 0;
  for (const auto& name : ckpt.names()) {
    const TensorInfo* t = ckpt.find(name);
    if (name.find(".mlp.experts.") != std::string::npos) experts += static_cast<double>(t->nbytes);
    else if (name.find("embed_tokens") != std::string::npos) embed_row = static_cast<double>(t->nbytes) / static_cast<double>(c.vocab_size);
    else dense += static_cast<double>(t->nbytes);
  }
  if (c.tie_word_embeddings) dense += embed_row * static_cast<double>(c.vocab_size);  // the LM head reads it whole
  double touched = 0;
  if (c.n_expert > 0) {
    const double e = static_cast<double>(c.n_expert), k = static_cast<double>(c.n_expert_used);
    touched = 1.0 - std::pow(1.0 - k / e, static_cast<double>(batch));  // the share of experts read
  }
  return dense + experts * touched + embed_row * static_cast<double>(batch);
}

struct Decoder {
  Model& model;
  KvCache& kv;
  std::vector<SequenceKv> seqs;
  std::mt19937 rng{1};

  // The next decode step: one random token per sequence, its pages reserved.
  Result<ForwardBatch> next_step() {
    ForwardBatch b;
    for (size_t i = 0; i < seqs.size(); ++i) {
      FT_RETURN_IF_ERROR(seqs[i].reserve(kv.pool(), kv.page_size(), 1));
      const int32_t token = static_cast<int32_t>(rng() % static_cast<uint32_t>(model.config().vocab_size));
      b.add_sequence(std::span<const int32_t>(&token, 1), seqs[i], kv.page_size());
      b.logit_rows.push_back(static_cast<int32_t>(i));
    }
    return b;
  }
  void advance() {
    for (auto& s : seqs) s.advance(1);
  }
};

Status bench_decode(const Args& a) {
  FT_ASSIGN_OR_RETURN(int64_t batch, a.integer("batch"));
  FT_ASSIGN_OR_RETURN(int64_t tokens, a.integer("tokens"));
  FT_ASSIGN_OR_RETURN(int64_t prompt, a.integer("prompt"));
  if (batch < 1 || batch > 1024 || tokens < 1 || prompt < 1) return invalid_argument("--batch, --tokens, --prompt must be >= 1");
  FT_ASSIGN_OR_RETURN(SessionOptions o, session_options(a));
  if (!a.has("dtype") && o.device == "cuda") o.act_dtype = DType::kBF16;
  BackendOptions bo;
  bo.n_threads = o.n_threads;
  FT_ASSIGN_OR_RETURN(auto inner, create_backend(o.device, bo));
  ProfilingBackend be(std::move(inner));
  FT_ASSIGN_OR_RETURN(SafetensorsArchive ckpt, SafetensorsArchive::open_dir(o.model_dir));
  FT_ASSIGN_OR_RETURN(ModelConfig config, load_model_config(o.model_dir));
  const int64_t warmup = 3, context = prompt + warmup + 2 * tokens + 4;
  ModelOptions mo;
  mo.act_dtype = o.act_dtype;
  mo.max_tokens = static_cast<int32_t>(std::max(prompt, batch));
  mo.max_seqs = static_cast<int32_t>(batch);
  mo.page_size = o.page_size;
  mo.max_pages_per_seq = static_cast<int32_t>((context + o.page_size - 1) / o.page_size);
  mo.show_progress = o.show_progress;
  FT_ASSIGN_OR_RETURN(auto model, load_model(o.model_dir, be, mo));
  FT_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(be, model->kv_layers(), o.act_dtype,
                                                  mo.max_pages_per_seq * mo.max_seqs, o.page_size));
  FT_ASSIGN_OR_RETURN(Tensor logits, be.empty(DType::kF32, {mo.max_tokens, config.vocab_size}));
  FT_ASSIGN_OR_RETURN(double bandwidth, copy_bandwidth(be));

  Decoder dec{*model, kv, std::vector<SequenceKv>(static_cast<size_t>(batch))};
  for (auto& s : dec.seqs) {  // prefill: one random prompt per sequence
    ForwardBatch b;
    FT_RETURN_IF_ERROR(s.reserve(kv.pool(), kv.page_size(), static_cast<int32_t>(prompt)));
    std::vector<int32_t> ids(static_cast<size_t>(prompt));
    for (auto& id : ids) id = static_cast<int32_t>(dec.rng() % static_cast<uint32_t>(config.vocab_size));
    b.add_sequence(ids, s, kv.page_size());
    b.logit_rows = {static_cast<int32_t>(prompt - 1)};
    FT_RETURN_IF_ERROR(model->forward(b, kv, logits));
    s.advance(static_cast<int32_t>(prompt));
  }
  auto eager_steps = [&](int64_t n) -> Result<double> {
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < n; ++i) {
      FT_ASSIGN_OR_RETURN(ForwardBatch b, dec.next_step());
      FT_RETURN_IF_ERROR(model->forward(b, kv, logits));
      dec.advance();
    }
    return seconds_since(t0);
  };
  FT_RETURN_IF_ERROR(eager_steps(warmup).status());
  FT_ASSIGN_OR_RETURN(double eager_s, eager_steps(tokens));

  // One graph for this batch size, captured once and replayed every step after staging its metadata.
  double graph_s = 0;
  std::string bitwise = "n/a";
  FT_ASSIGN_OR_RETURN(ForwardBatch first, dec.next_step());
  FT_RETURN_IF_ERROR(model->stage(first, kv));
  auto graph = be.capture([&] { return model->run_staged(kv, logits); });
  if (graph.ok()) {
    // The same staged step eagerly, then replayed: kv_store rewrites the same slots, so both must agree bit
    // for bit.
    const size_t n_logits = static_cast<size_t>(batch * config.vocab_size);
    std::vector<float> eager_logits(n_logits), graph_logits(n_logits);
    auto fetch = [&](std::vector<float>& dst) {
      Tensor host = Tensor::make(DType::kF32, {batch, config.vocab_size}, wrap_host(dst.data(), n_logits * 4, nullptr));
      FT_RETURN_IF_ERROR(be.copy(logits.slice(0, 0, batch), host));
      return be.stream().synchronize();
    };
    FT_RETURN_IF_ERROR(model->run_staged(kv, logits));
    FT_RETURN_IF_ERROR(fetch(eager_logits));
    FT_RETURN_IF_ERROR((*graph)->launch());
    FT_RETURN_IF_ERROR(fetch(graph_logits));
    bitwise = std::memcmp(eager_logits.data(), graph_logits.data(), n_logits * 4) == 0 ? "yes" : "NO";
    dec.advance();
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < tokens; ++i) {
      FT_ASSIGN_OR_RETURN(ForwardBatch b, dec.next_step());
      FT_RETURN_IF_ERROR(model->stage(b, kv));
      FT_RETURN_IF_ERROR((*graph)->launch());
      FT_RETURN_IF_ERROR(be.stream().synchronize());
      dec.advance();
    }
    graph_s = seconds_since(t0);
  } else {
    FT_RETURN_IF_ERROR(model->run_staged(kv, logits));
    FT_RETURN_IF_ERROR(be.stream().synchronize());
    dec.advance();
  }

  const double step_bytes = weight_bytes_per_step(ckpt, config, batch);
  const double best_s = graph_s > 0 ? graph_s : eager_s;
  const double steps_per_s = static_cast<double>(tokens) / best_s;
  std::printf("model %s: %s, %lld layers, %.2f GB of weights; device %s, %s activations\n", o.model_dir.c_str(),
              config.architecture.c_str(), static_cast<long long>(config.n_layer),
              static_cast<double>(ckpt.total_bytes()) / 1e9, be.name(), dtype_name(o.act_dtype));
  std::printf("device-to-device copy bandwidth (read + write): %.0f GB/s\n", bandwidth / 1e9);
  std::printf("decode: batch %lld, %lld steps after a %lld-token prompt\n", static_cast<long long>(batch),
              static_cast<long long>(tokens), static_cast<long long>(prompt));
  std::printf("  eager: %.1f tok/s, %.3f ms/step\n", static_cast<double>(batch * tokens) / eager_s,
              1e3 * eager_s / static_cast<double>(tokens));
  if (graph_s > 0)
    std::printf("  graph: %.1f tok/s, %.3f ms/step (replay bitwise equal to eager: %s)\n",
                static_cast<double>(batch * tokens) / graph_s, 1e3 * graph_s / static_cast<double>(tokens),
                bitwise.c_str());
  else
    std::printf("  graph: not available on %s (%s)\n", be.name(), graph.status().to_string().c_str());
  std::printf("  weight bytes read per step: %.3f GB (%.3f GB per token); achieved %.0f GB/s = %.1f%% of the copy "
              "bandwidth\n",
              step_bytes / 1e9, step_bytes / 1e9 / static_cast<double>(batch), step_bytes * steps_per_s / 1e9,
              100.0 * step_bytes * steps_per_s / bandwidth);
  std::printf("  roofline (bytes / copy bandwidth): %.1f tok/s; reached %.1f%%\n",
              static_cast<double>(batch) * bandwidth / step_bytes, 100.0 * step_bytes * steps_per_s / bandwidth);
  if (!a.on("profile") || be.device().is_cpu()) return ok_status();

  // Per-op breakdown over eager steps, every op bracketed by stream marks.
  constexpr int kProfileSteps = 5;
  std::map<std::string, std::pair<int64_t, double>> by_label;  // label -> (calls, ms)
  double total_ms = 0;
  for (int i = 0; i < kProfileSteps; ++i) {
    FT_ASSIGN_OR_RETURN(ForwardBatch b, dec.next_step());
    FT_RETURN_IF_ERROR(model->stage(b, kv));
    FT_RETURN_IF_ERROR(be.stream().synchronize());
    FT_RETURN_IF_ERROR(be.start());
    FT_RETURN_IF_ERROR(model->run_staged(kv, logits));
    FT_ASSIGN_OR_RETURN(auto ops, be.stop());
    dec.advance();
    for (const auto& [label, ms] : ops) {
      by_label[label].first += 1;
      by_label[label].second += ms;
      total_ms += ms;
    }
  }
  std::vector<std::pair<std::string, std::pair<int64_t, double>>> rows(by_label.begin(), by_label.end());
  std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.second.second > y.second.second; });
  std::printf("per-op breakdown (eager, CUDA events before every op; ms per step):\n");
  std::printf("  %-36s %8s %10s %7s\n", "op", "calls", "ms", "share");
  for (const auto& [label, v] : rows)
    std::printf("  %-36s %8lld %10.4f %6.1f%%\n", label.c_str(), static_cast<long long>(v.first / kProfileSteps),
                v.second / kProfileSteps, 100.0 * v.second / total_ms);
  std::printf("  %-36s %8s %10.4f\n", "total (eager step, profiled)", "", total_ms / kProfileSteps);
  return ok_status();
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "decode") != 0) {
    std::fprintf(stderr, "usage: ft bench decode --model DIR [--device cuda] [--batch N] [--tokens N] [--profile]\n");
    return argc >= 2 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) ? 0 : 2;
  }
  Args a("bench decode", "Measures batched decode throughput (every weight resident) against the measured copy "
                         "bandwidth; activations default to bf16 on cuda.");
  add_model_flags(a);
  a.flag("batch", "N", "sequences decoded together", "1");
  a.flag("tokens", "N", "timed decode steps", "128");
  a.flag("prompt", "N", "prompt tokens prefilled per sequence first", "32");
  a.flag("profile", "", "also print a per-op breakdown of an eager step");
  Status st = a.parse(argc - 1, argv + 1);
  if (st.ok()) st = bench_decode(a);
  return st.ok() ? 0 : report_error("bench", st);
}

}  // namespace ft::cli
