// ft bench decode: batched decode throughput, eager and as one replayed graph per step, against the
// device-to-device copy bandwidth it measures itself (and, with experts in host memory, against the serial bound
// of HBM, PCIe and CPU time); optionally a per-op breakdown. ft bench bw: the bandwidth profile. ft bench sample:
// the sample op alone (bench_sample.cpp). ft bench engine: decode through the serving engine (bench_engine.cpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>

#include "cli/bench_engine.h"
#include "cli/bench_sample.h"
#include "cli/commands.h"
#include "cli/model_flags.h"
#include "cli/op_profiler.h"
#include "cli/serve_flags.h"
#include "engine/expert_setup.h"
#include "io/mxfp4.h"
#include "io/safetensors_archive.h"
#include "model/model.h"
#include "moe/bandwidth.h"
#include "moe/share_tuner.h"

namespace ft::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Weight bytes one decode step of `batch` tokens reads: everything but the embedding table (batch rows of
// it) and the experts no token picks; with uniform routing a step touches E (1 - (1 - k/E)^batch) experts.
// MXFP4 experts count as stored where they stay MXFP4 (`mxfp4_kept`), else as the bf16 they load as (io/mxfp4.h: a
// byte of `_blocks` holds two values; `_scales` none).
double weight_bytes_per_step(const SafetensorsArchive& ckpt, const ModelConfig& c, int64_t batch, bool mxfp4_kept) {
  double dense = 0, experts = 0, embed_row = 0;
  for (const auto& name : ckpt.names()) {
    const TensorInfo* t = ckpt.find(name);
    if (name.ends_with(kMxfp4Blocks))
      experts += (mxfp4_kept ? 1.0 : 4.0) * static_cast<double>(t->nbytes);
    else if (name.ends_with(kMxfp4Scales))
      experts += mxfp4_kept ? static_cast<double>(t->nbytes) : 0.0;
    else if (name.find(".mlp.experts.") != std::string::npos)
      experts += static_cast<double>(t->nbytes);
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

using OpTimes = std::map<std::string, std::pair<int64_t, double>>;  // label -> (calls, ms)

void add_times(OpTimes& into, const std::vector<std::pair<std::string, double>>& ops) {
  for (const auto& [label, ms] : ops) {
    into[label].first += 1;
    into[label].second += ms;
  }
}

// Ops by time, per run of `runs`.
void print_breakdown(const char* what, const OpTimes& times, int runs) {
  double total_ms = 0;
  for (const auto& [label, v] : times) total_ms += v.second;
  std::vector<std::pair<std::string, std::pair<int64_t, double>>> rows(times.begin(), times.end());
  std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.second.second > y.second.second; });
  std::printf("per-op breakdown of the %s (eager, CUDA events before every op; ms per run):\n", what);
  std::printf("  %-36s %8s %10s %7s\n", "op", "calls", "ms", "share");
  for (const auto& [label, v] : rows)
    std::printf("  %-36s %8lld %10.4f %6.1f%%\n", label.c_str(), static_cast<long long>(v.first / runs),
                v.second / runs, 100.0 * v.second / total_ms);
  std::printf("  %-36s %8s %10.4f\n", "total (profiled)", "", total_ms / runs);
}

struct Decoder {
  Model& model;
  Backend& backend;
  KvCache& kv;
  std::vector<SequenceKv> seqs;
  std::mt19937 rng{1};
  std::vector<float> bias;  // --routing uniform: a fresh random selection bias per step

  // The next decode step: one random token per sequence, its pages reserved (and, for uniform routing, every MoE
  // layer's choice redrawn: a bias far larger than the router's scores decides the top-k).
  Result<ForwardBatch> next_step() {
    if (const Tensor rb = model.routing_bias(); rb.defined()) {
      bias.resize(static_cast<size_t>(rb.numel()));
      for (float& v : bias) v = 100.0f * std::uniform_real_distribution<float>(0.0f, 1.0f)(rng);
      FT_RETURN_IF_ERROR(backend.copy(Tensor::make(DType::kF32, {rb.numel()}, wrap_host(bias.data(), bias.size() * 4, nullptr)),
                                      rb.reshape({rb.numel()})));
    }
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
  FT_ASSIGN_OR_RETURN(int64_t batch, a.integer("batch", 1, 1024));
  FT_ASSIGN_OR_RETURN(int64_t tokens, a.integer("tokens", 1));
  FT_ASSIGN_OR_RETURN(int64_t prompt, a.integer("prompt", 1));
  FT_ASSIGN_OR_RETURN(SessionOptions o, session_options(a));
  if (!a.has("dtype") && o.device == "cuda") o.act_dtype = DType::kBF16;
  BackendOptions bo;
  bo.n_threads = o.n_threads;
  FT_ASSIGN_OR_RETURN(auto inner, create_backend(o.device, bo));
  ProfilingBackend be(std::move(inner));
  FT_ASSIGN_OR_RETURN(const Backend::MemoryInfo memory_at_start, be.memory_info());
  FT_ASSIGN_OR_RETURN(SafetensorsArchive ckpt, SafetensorsArchive::open_dir(o.model_dir));
  FT_ASSIGN_OR_RETURN(ModelConfig config, load_model_config(o.model_dir));
  // Each sequence holds what the run writes, or --context tokens as a server sizes it (the page table's width; the
  // attention sees the columns of the step's key capacity, Model::staged_key_capacity).
  const int64_t warmup = 3, needed = prompt + warmup + 2 * tokens + 4;
  if (o.context > 0 && o.context < needed)
    return invalid_argument("flag --context must be at least " + std::to_string(needed) + " for this run");
  const int64_t context = o.context > 0 ? o.context : needed;
  double share = 0.5;
  std::string note;
  const MoeBackend moe = resolve_moe_backend(o.moe, be, &share, &note);
  if (!note.empty()) std::printf("%s\n", note.c_str());
  const std::string routing = a.str("routing");
  if (routing != "model" && routing != "uniform") return invalid_argument("flag --routing must be model or uniform");
  ModelOptions mo;
  mo.experts_on_host = moe != MoeBackend::kFused && config.n_expert > 0;
  mo.routing_bias = routing == "uniform" && config.n_expert > 0;
  mo.act_dtype = o.act_dtype;
  mo.max_tokens = static_cast<int32_t>(std::max(prompt, batch));
  mo.max_seqs = static_cast<int32_t>(batch);
  mo.page_size = o.page_size;
  mo.max_pages_per_seq = static_cast<int32_t>((context + o.page_size - 1) / o.page_size);
  mo.show_progress = o.show_progress;
  FT_ASSIGN_OR_RETURN(auto model, load_model(o.model_dir, be, mo));
  FT_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(be, model->kv_layers(), o.act_dtype,
                                                  mo.max_pages_per_seq * mo.max_seqs, o.page_size,
                                                  model->state_layers(), mo.max_seqs));
  FT_ASSIGN_OR_RETURN(Tensor logits, be.empty(DType::kF32, {batch, config.vocab_size}));  // one row per sequence
  // Bytes a device-to-device copy moves per second (read + write), over 2 x 1 GiB buffers.
  FT_ASSIGN_OR_RETURN(const double copy_gbps, measure_device_copy(be, size_t{1} << 30));
  const double bandwidth = copy_gbps * 1e9;
  std::unique_ptr<ExpertCache> experts;
  MemoryPlan plan;  // with experts in host memory
  std::unique_ptr<ShareTuner> tuner;
  double pcie = 0, pcie_copy = 0, cpu_bw = 0;  // GB/s: fill kernel, copy engine, CPU expert kernels
  if (ExpertStore* store = model->expert_store()) {
    MemoryPlanInput mp;
    mp.device = be.device();
    if (a.has("memory-budget")) {
      FT_ASSIGN_OR_RETURN(mp.budget, parse_size(a.str("memory-budget")));
    }
    mp.weights = model->weight_bytes();
    mp.workspace = model->workspace_bytes() + logits.nbytes();
    mp.state_bytes = StatePool::slot_bytes(model->state_layers()) * static_cast<uint64_t>(batch);
    mp.page_bytes = KvCache::page_bytes(model->kv_layers(), o.act_dtype, o.page_size);
    mp.page_size = o.page_size;
    mp.min_pages = static_cast<int64_t>(mo.max_pages_per_seq) * batch;
    mp.num_pages = mp.min_pages;  // the KV the bench allocated
    ExpertCacheOptions eo = expert_cache_options(*model, moe, share, o.moe.cpu_threads);
    add_expert_plan(mp, *model, eo, o.moe);
    FT_ASSIGN_OR_RETURN(plan, plan_memory(mp));
    std::printf("%s\n", plan.describe().c_str());
    FT_ASSIGN_OR_RETURN(experts, attach_expert_cache(be, *model, eo, plan.expert_slots));
    if (moe == MoeBackend::kHybrid) tuner = std::make_unique<ShareTuner>(share);
    FT_ASSIGN_OR_RETURN(pcie, measure_h2d_fill(be, store->shape(), 16));
    FT_ASSIGN_OR_RETURN(pcie_copy, measure_h2d_copy(be, size_t{256} << 20));
    FT_ASSIGN_OR_RETURN(cpu_bw, measure_cpu_experts(store->shape(), eo.n_expert_used, 64, eo.cpu_threads));
    std::printf("expert cache: %s, %lld slots of %lld experts (%.1f%%), %.1f MB per expert; PCIe (fill kernel) "
                "%.1f GB/s, CPU experts %.1f GB/s\n",
                moe_backend_name(moe), static_cast<long long>(plan.expert_slots), static_cast<long long>(store->n_keys()),
                100.0 * static_cast<double>(plan.expert_slots) / static_cast<double>(store->n_keys()),
                static_cast<double>(store->record_bytes()) / 1e6, pcie, cpu_bw);
  }
  auto expert_totals = [&]() -> Result<ExpertLayerStats> {
    ExpertLayerStats t;
    if (!experts) return t;
    FT_ASSIGN_OR_RETURN(auto layers, experts->stats());
    for (const auto& l : layers) {
      t.hits += l.hits, t.fetched += l.fetched, t.cpu += l.cpu;
      t.copy_ms += l.copy_ms, t.cpu_ms += l.cpu_ms;
    }
    return t;
  };

  Decoder dec{*model, be, kv, std::vector<SequenceKv>(static_cast<size_t>(batch))};
  const bool profile = a.on("profile") && !be.device().is_cpu();
  OpTimes prefill_ops;
  std::vector<double> prefill_times, prefill_copy_ms;
  // Prefill: one random prompt per sequence, each timed alone. The first one is cold (first-call setup) and, with
  // --profile, the last one is profiled: the figure is the fastest unprofiled one (batch 2, or 3 with --profile). A
  // batch of one prefills its sequence twice, the first prompt's KV released, so that its figure is a warm one too.
  const size_t n_prompts = dec.seqs.size() == 1 ? 2 : dec.seqs.size();
  for (size_t r = 0; r < n_prompts; ++r) {
    SequenceKv& s = dec.seqs[std::min(r, dec.seqs.size() - 1)];
    if (r > 0 && dec.seqs.size() == 1) s.release(kv);
    FT_ASSIGN_OR_RETURN(const ExpertLayerStats prefill_before, expert_totals());
    const auto prefill_t0 = Clock::now();
    ForwardBatch b;
    FT_RETURN_IF_ERROR(s.reserve(kv.pool(), kv.page_size(), static_cast<int32_t>(prompt)));
    if (!model->state_layers().empty()) FT_RETURN_IF_ERROR(s.acquire_state(kv.states()));
    std::vector<int32_t> ids(static_cast<size_t>(prompt));
    for (auto& id : ids) id = static_cast<int32_t>(dec.rng() % static_cast<uint32_t>(config.vocab_size));
    b.add_sequence(ids, s, kv.page_size());
    b.logit_rows = {static_cast<int32_t>(prompt - 1)};
    const bool profiled = profile && r + 1 == n_prompts && dec.seqs.size() > 1;
    if (profiled) FT_RETURN_IF_ERROR(be.start());
    FT_RETURN_IF_ERROR(model->forward(b, kv, logits));
    if (profiled) {
      FT_ASSIGN_OR_RETURN(auto ops, be.stop());
      add_times(prefill_ops, ops);
    }
    FT_RETURN_IF_ERROR(be.stream().synchronize());
    if (!profiled) prefill_times.push_back(seconds_since(prefill_t0));
    FT_ASSIGN_OR_RETURN(const ExpertLayerStats prefill_after, expert_totals());
    if (!profiled) prefill_copy_ms.push_back(prefill_after.copy_ms - prefill_before.copy_ms);
    s.advance(static_cast<int32_t>(prompt));
  }
  const auto fastest = std::min_element(prefill_times.begin(), prefill_times.end());
  const double prefill_s = *fastest, prefill_copy_s = 1e-3 * prefill_copy_ms[static_cast<size_t>(fastest - prefill_times.begin())];
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
  FT_ASSIGN_OR_RETURN(ExpertLayerStats before, expert_totals());
  FT_ASSIGN_OR_RETURN(double eager_s, eager_steps(tokens));
  FT_ASSIGN_OR_RETURN(ExpertLayerStats after, expert_totals());  // replaced by the graph steps' when they run

  // One graph for this batch size (captured again when the key capacity or the expert path changes), replayed every
  // step after staging its metadata.
  double graph_s = 0, stage_s = 0, launch_s = 0;  // the graph steps: all, forming and staging them, launching them
  double capture_s = 0;                           // captures during the graph steps, which graph_s leaves out
  int recaptures = 0;
  std::string bitwise = "n/a";
  FT_ASSIGN_OR_RETURN(ForwardBatch first, dec.next_step());
  FT_RETURN_IF_ERROR(model->stage(first, kv));
  uint64_t epoch = model->graph_epoch();
  int64_t capacity = model->staged_key_capacity();
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
    // Hybrid's first run fetched some of the experts the replay then finds resident: a different CPU / device
    // split of the same sums.
    bitwise = !model->state_layers().empty() ? "n/a, the recurrent state advanced"
              : moe == MoeBackend::kHybrid   ? "n/a, hybrid's lookups moved experts between the two runs"
              : std::memcmp(eager_logits.data(), graph_logits.data(), n_logits * 4) == 0 ? "yes"
                                                                                          : "NO";
    dec.advance();
    FT_ASSIGN_OR_RETURN(before, expert_totals());
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < tokens; ++i) {
      const auto step_t0 = Clock::now();
      FT_ASSIGN_OR_RETURN(ForwardBatch b, dec.next_step());
      FT_RETURN_IF_ERROR(model->stage(b, kv));
      stage_s += seconds_since(step_t0);
      // Hybrid switched paths, or the rows outgrew the key capacity: capture the step again.
      const bool recapture = model->graph_epoch() != epoch || model->staged_key_capacity() != capacity;
      if (recapture) {
        epoch = model->graph_epoch();
        capacity = model->staged_key_capacity();
        const auto capture_t0 = Clock::now();
        graph = be.capture([&] { return model->run_staged(kv, logits); });
        FT_RETURN_IF_ERROR(graph.status());
        FT_RETURN_IF_ERROR(be.stream().synchronize());  // its upload too
        capture_s += seconds_since(capture_t0);
        ++recaptures;
      }
      const auto launch_t0 = Clock::now();
      FT_RETURN_IF_ERROR((*graph)->launch());
      launch_s += seconds_since(launch_t0);
      FT_RETURN_IF_ERROR(be.stream().synchronize());
      dec.advance();
      if (tuner && !recapture && tuner->observe(1e3 * seconds_since(step_t0))) {  // a capture is no step time
        FT_RETURN_IF_ERROR(experts->set_fetch_share(tuner->share()));
      }
    }
    graph_s = seconds_since(t0) - capture_s;
    FT_ASSIGN_OR_RETURN(after, expert_totals());
  } else {
    FT_RETURN_IF_ERROR(model->run_staged(kv, logits));
    FT_RETURN_IF_ERROR(be.stream().synchronize());
    dec.advance();
  }

  // As the loader keeps them (WeightLoader::expert_dtype): MXFP4 on a host backend whose moe_experts takes it.
  const bool mxfp4_kept = be.device().is_cpu() && be.ops().supports(Op::kMoeExperts, o.act_dtype, DType::kF4E2M1);
  const double step_bytes = weight_bytes_per_step(ckpt, config, batch, mxfp4_kept);
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
  if (graph_s > 0) {
    std::printf("  graph: %.1f tok/s, %.3f ms/step (replay bitwise equal to eager: %s)\n",
                static_cast<double>(batch * tokens) / graph_s, 1e3 * graph_s / static_cast<double>(tokens),
                bitwise.c_str());
    std::printf("  graph steps on the host: %.1f us forming and staging each, %.1f us launching it\n",
                1e6 * stage_s / static_cast<double>(tokens), 1e6 * launch_s / static_cast<double>(tokens));
    if (recaptures > 0)
      std::printf("  captured again %d times during them (%.1f ms, not counted)\n", recaptures, 1e3 * capture_s);
  } else {
    std::printf("  graph: not available on %s (%s)\n", be.name(), graph.status().to_string().c_str());
  }
  std::printf("  weight bytes read per step: %.3f GB (%.3f GB per token); achieved %.0f GB/s = %.1f%% of the copy "
              "bandwidth\n",
              step_bytes / 1e9, step_bytes / 1e9 / static_cast<double>(batch), step_bytes * steps_per_s / 1e9,
              100.0 * step_bytes * steps_per_s / bandwidth);
  std::printf("  roofline (bytes / copy bandwidth): %.1f tok/s; reached %.1f%%\n",
              static_cast<double>(batch) * bandwidth / step_bytes, 100.0 * step_bytes * steps_per_s / bandwidth);
  std::printf("prefill: %lld tokens in %.3f s = %.1f tok/s (the fastest of %zu timed prompts; the first took %.3f s)\n",
              static_cast<long long>(prompt), prefill_s, static_cast<double>(prompt) / prefill_s,
              prefill_times.size(), prefill_times.front());
  if (experts) {
    const ExpertStore& store = *model->expert_store();
    const double steps = static_cast<double>(tokens), record = static_cast<double>(store.record_bytes());
    const double lookups = static_cast<double>((after.hits - before.hits) + (after.fetched - before.fetched) +
                                               (after.cpu - before.cpu));
    const double fetched = static_cast<double>(after.fetched - before.fetched) / steps;
    const double on_cpu = static_cast<double>(after.cpu - before.cpu) / steps;
    const double hbm_s = step_bytes / bandwidth, pcie_s = fetched * record / (pcie * 1e9),
                 cpu_s = on_cpu * record / (cpu_bw * 1e9);
    const double bound_s = hbm_s + pcie_s + cpu_s, step_s = best_s / steps;
    std::printf("  experts per step: %.1f distinct; miss rate %.1f%%; fetched %.1f (%.3f GB over PCIe), on the CPU "
                "%.1f; fetch share %.2f\n",
                lookups / steps, 100.0 * (fetched + on_cpu) * steps / std::max(lookups, 1.0), fetched,
                fetched * record / 1e9, on_cpu, experts->fetch_share());
    std::printf("  serial bound: %.3f ms HBM + %.3f ms PCIe + %.3f ms CPU = %.3f ms/step (%.1f tok/s); reached %.1f%%\n",
                1e3 * hbm_s, 1e3 * pcie_s, 1e3 * cpu_s, 1e3 * bound_s, static_cast<double>(batch) / bound_s,
                100.0 * bound_s / step_s);
    const double copy_ms = (after.copy_ms - before.copy_ms) / steps, cpu_ms = (after.cpu_ms - before.cpu_ms) / steps;
    std::printf("  time per step in copies %.3f ms (%.1f%% of the step), in CPU expert jobs %.3f ms (%.1f%%)\n", copy_ms,
                100.0 * copy_ms / (1e3 * step_s), cpu_ms, 100.0 * cpu_ms / (1e3 * step_s));
    const double pool_s = static_cast<double>(store.bytes()) / (pcie_copy * 1e9);
    std::printf("  prefill bound (expert pool over PCIe, copy engine %.1f GB/s): %.3f s; prefill took %.2fx of it, "
                "its copies %.3f s\n",
                pcie_copy, pool_s, prefill_s / pool_s, prefill_copy_s);
    FT_RETURN_IF_ERROR(experts->cpu_status());
    if (!be.device().is_cpu()) {  // the plan against what the device actually holds after the steps
      FT_ASSIGN_OR_RETURN(const Backend::MemoryInfo now, be.memory_info());
      const uint64_t used = (now.total - now.free) - (memory_at_start.total - memory_at_start.free);
      const uint64_t planned = plan.weights + plan.workspace + plan.state_bytes + plan.expert_cache_bytes + plan.kv_bytes;
      std::printf("  device memory in use after the steps: %.2f GiB (plan %.2f GiB, budget %.2f GiB)\n",
                  static_cast<double>(used) / (1 << 30), static_cast<double>(planned) / (1 << 30),
                  static_cast<double>(plan.budget) / (1 << 30));
    }
  }
  if (!profile) return ok_status();
  if (prefill_ops.empty())  // one sequence: its prefill is the timed one, not profiled
    std::printf("per-op breakdown of the prefill: with --batch 2 or more (the last sequence's prefill is profiled)\n");
  else
    print_breakdown("prefill of one sequence", prefill_ops, 1);

  // Per-op breakdown over eager steps, every op bracketed by stream marks.
  constexpr int kProfileSteps = 5;
  OpTimes decode_ops;
  for (int i = 0; i < kProfileSteps; ++i) {
    FT_ASSIGN_OR_RETURN(ForwardBatch b, dec.next_step());
    FT_RETURN_IF_ERROR(model->stage(b, kv));
    FT_RETURN_IF_ERROR(be.stream().synchronize());
    FT_RETURN_IF_ERROR(be.start());
    FT_RETURN_IF_ERROR(model->run_staged(kv, logits));
    FT_ASSIGN_OR_RETURN(auto ops, be.stop());
    dec.advance();
    add_times(decode_ops, ops);
  }
  print_breakdown("eager decode step", decode_ops, kProfileSteps);
  return ok_status();
}

}  // namespace

Status bench_bw(const Args& a) {
  ExpertShape shape{1, 1, 2048, 768, DType::kBF16};  // Qwen3-30B-A3B's experts unless --model says otherwise
  int64_t k = 8;
  if (a.has("model")) {
    FT_ASSIGN_OR_RETURN(ModelConfig c, load_model_config(a.str("model")));
    if (c.n_expert == 0) return invalid_argument(a.str("model") + ": not a MoE model");
    shape.d = c.hidden_size;
    shape.inter = c.moe_intermediate_size;
    k = c.n_expert_used;
  }
  FT_ASSIGN_OR_RETURN(int64_t threads, a.integer("threads", 0, 4096));
  BandwidthProfile p;
  p.cpu_threads = static_cast<int>(threads);
  const size_t record = dtype_bytes(shape.dtype, static_cast<size_t>(3 * shape.d * shape.inter));
  const int64_t records = std::max<int64_t>(16, static_cast<int64_t>((size_t{1} << 30) / record));  // >= 1 GiB
  FT_ASSIGN_OR_RETURN(p.cpu_experts, measure_cpu_experts(shape, k, records, p.cpu_threads));
  auto device = create_backend(a.str("device"));
  if (device.ok() && !(*device)->device().is_cpu()) {
    FT_ASSIGN_OR_RETURN(p.h2d_copy, measure_h2d_copy(**device, size_t{1} << 30));
    FT_ASSIGN_OR_RETURN(p.h2d_kernel, measure_h2d_fill(**device, shape, records));
    FT_ASSIGN_OR_RETURN(double d2d, measure_device_copy(**device, size_t{1} << 30));
    p.device = d2d;
    p.device_name = (*device)->name();
  }
  std::printf("expert shape d %lld, inter %lld, k %lld, %.2f MB per expert (bf16)\n", static_cast<long long>(shape.d),
              static_cast<long long>(shape.inter), static_cast<long long>(k), static_cast<double>(record) / 1e6);
  std::printf("pinned host -> device, copy engine: %8.1f GB/s\n", p.h2d_copy);
  std::printf("pinned host -> device, fill kernel: %8.1f GB/s\n", p.h2d_kernel);
  std::printf("CPU expert kernels (decode):        %8.1f GB/s\n", p.cpu_experts);
  std::printf("device memory copy (read + write):  %8.1f GB/s\n", p.device);
  std::printf("auto would pick: %s (balanced fetch share %.2f)\n", moe_backend_name(pick_moe_backend(&p)),
              balanced_fetch_share(p));
  const std::string out = a.has("out") ? a.str("out") : default_profile_path();
  FT_RETURN_IF_ERROR(save_profile(p, out));
  std::printf("profile written to %s\n", out.c_str());
  return ok_status();
}

int cmd_bench(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "bw") == 0) {
    Args a("bench bw", "Measures pinned host-to-device bandwidth (copy engine and the cache-fill kernel), the CPU "
                       "expert kernels' bandwidth and device memory bandwidth; writes the profile --moe-strategy auto "
                       "reads.");
    a.flag("model", "DIR", "take the expert shape from this checkpoint's config.json (default: Qwen3-30B-A3B's)");
    a.flag("device", "NAME", "device to measure (cuda; cpu measures the CPU only)", "cuda");
    a.flag("threads", "N", "CPU threads (0 = one per core)", "0");
    a.flag("out", "FILE", "profile path (default: ~/.cache/freetoken/bw_profile.json)");
    Status st = a.parse(argc - 1, argv + 1);
    if (st.ok()) st = bench_bw(a);
    return st.ok() ? 0 : report_error("bench", st);
  }
  if (argc >= 2 && std::strcmp(argv[1], "sample") == 0) {
    Args a("bench sample", "Times the sample op (a decode step's draw from its logits) over random logits for common "
                           "sampling settings.");
    a.flag("device", "NAME", "device to measure (cuda, cpu or ref)", "cuda");
    a.flag("batch", "N", "rows sampled together", "1");
    a.flag("vocab", "N", "logits a row", "151936");
    a.flag("scale", "F", "standard deviation of the random logits", "3");
    a.flag("iters", "N", "timed calls per setting", "200");
    Status st = a.parse(argc - 1, argv + 1);
    if (st.ok()) st = bench_sample(a);
    return st.ok() ? 0 : report_error("bench", st);
  }
  if (argc >= 2 && std::strcmp(argv[1], "engine") == 0) {
    Args a("bench engine",
           "Measures decode throughput through the serving engine's step loop (scheduling, graph "
           "replay, sampling, token events), requests submitted to the engine directly.");
    a.required("model", "DIR", "Hugging Face checkpoint directory");
    add_engine_flags(a);
    a.flag("batch", "N", "requests decoded together", "1");
    a.flag("tokens", "N", "tokens generated per request", "256");
    a.flag("prompt", "N", "random prompt tokens per request", "32");
    a.flag("temperature", "F", "sampling temperature (0: greedy)", "0");
    a.flag("top-k", "N", "top-k (0: off)", "0");
    a.flag("top-p", "F", "top-p (1: off)", "1");
    a.flag("min-p", "F", "min-p (0: off)", "0");
    a.flag("logprobs", "N", "top logprobs per token (-1: none)", "-1");
    Status st = a.parse(argc - 1, argv + 1);
    if (st.ok()) st = bench_engine(a);
    return st.ok() ? 0 : report_error("bench", st);
  }
  if (argc < 2 || std::strcmp(argv[1], "decode") != 0) {
    std::fprintf(stderr,
                 "usage: ft bench decode --model DIR [--device cuda] [--batch N] [--tokens N] [--profile]\n"
                 "       ft bench bw [--device cuda] [--model DIR] [--out FILE]\n"
                 "       ft bench sample [--device cuda] [--batch N] [--vocab N]\n"
                 "       ft bench engine --model DIR [--device cuda --dtype bf16] [--batch N] [--tokens N]\n");
    return argc >= 2 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) ? 0 : 2;
  }
  Args a("bench decode", "Measures batched decode throughput (every weight resident) against the measured copy "
                         "bandwidth; activations default to bf16 on cuda. Sequences hold what the run needs unless "
                         "--context sets their capacity, as a server's context length does.");
  add_model_flags(a);
  a.flag("batch", "N", "sequences decoded together", "1");
  a.flag("tokens", "N", "timed decode steps", "128");
  a.flag("prompt", "N", "prompt tokens prefilled per sequence first", "32");
  a.flag("profile", "",
         "also print a per-op breakdown of an eager step (and of the last prompt's prefill when the batch is 2 or more)");
  a.flag("memory-budget", "SIZE", "device memory the plan may use, e.g. 8G (sizes the expert cache)");
  a.flag("routing", "MODE", "model (the router's choice) or uniform (k random experts per layer and step: no locality, "
                            "the expert cache's worst case)", "model");
  Status st = a.parse(argc - 1, argv + 1);
  if (st.ok()) st = bench_decode(a);
  return st.ok() ? 0 : report_error("bench", st);
}

}  // namespace ft::cli
