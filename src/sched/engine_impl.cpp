// EngineImpl: setup (model, memory plan, KV pool) and the engine thread's step loop.
#include "sched/engine_impl.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "core/check.h"
#include "core/log.h"
#include "engine/model_session.h"

namespace ft {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kNone: return "";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAborted: return "abort";
    case FinishReason::kError: return "error";
  }
  return "";
}

Result<std::unique_ptr<Engine>> Engine::create(const EngineOptions& options) { return EngineImpl::create(options); }

Result<std::unique_ptr<Engine>> EngineImpl::create(const EngineOptions& o) {
  if (o.max_running_requests < 1) return invalid_argument("--max-running-requests must be >= 1");
  if (o.max_prefill_length < 1) return invalid_argument("--max-prefill-length must be >= 1");
  if (o.page_size < 1) return invalid_argument("--page-size must be >= 1");
  std::unique_ptr<EngineImpl> e(new EngineImpl());
  SessionOptions so;
  so.model_dir = o.model_dir;
  so.device = o.device;
  FT_ASSIGN_OR_RETURN(so.act_dtype, dtype_from_name(o.dtype));
  so.n_threads = o.n_threads;
  so.context = o.context_length;
  so.page_size = o.page_size;
  so.max_seqs = std::min(o.max_running_requests * kMaxChoices, std::max(o.max_prefill_length, 1));
  so.max_tokens = std::max(o.max_prefill_length, so.max_seqs);
  so.show_progress = o.show_progress;
  FT_ASSIGN_OR_RETURN(so.moe.backend, moe_backend_from_name(o.moe_backend));
  so.moe.cache_size = o.moe_cache_size;
  so.moe.cache_rate = o.moe_cache_rate;
  so.moe.kv_reserve_tokens = o.kv_reserve_tokens;
  so.moe.profile_path = o.bw_profile;
  so.moe.cpu_threads = o.moe_cpu_threads;
  if (o.moe_cache_size < 0 || !(o.moe_cache_rate >= 0 && o.moe_cache_rate <= 1) || o.kv_reserve_tokens < 0)
    return invalid_argument("--moe-cache-size, --moe-cache-rate (in [0, 1]) and --kv-reserve-tokens must be >= 0");
  FT_ASSIGN_OR_RETURN(ModelSession session, ModelSession::load(so));
  e->backend_ = std::move(session.backend);
  e->device_used_at_start_ = session.device_used_before_weights;
  e->model_ = std::move(session.model);
  e->context_ = session.context;
  const DType act = so.act_dtype;
  const ModelOptions& mo = e->model_->options();
  const int64_t vocab = e->model_->config().vocab_size;
  FT_ASSIGN_OR_RETURN(e->logits_, e->backend_->empty(DType::kF32, {mo.max_seqs, vocab}));

  const auto layers = e->model_->kv_layers();
  MemoryPlanInput mp;
  mp.device = e->backend_->device();
  mp.budget = o.memory_budget;
  mp.ratio = o.memory_ratio;
  mp.weights = e->model_->weight_bytes();
  mp.workspace = e->model_->workspace_bytes() + e->logits_.nbytes();
  mp.page_bytes = KvCache::page_bytes(layers, act, o.page_size);
  // Every sequence that can be alive at once (running requests times their choices) holds one state slot.
  const auto state_layers = e->model_->state_layers();
  const int32_t n_state_slots = o.max_running_requests * kMaxChoices;
  mp.state_bytes = StatePool::slot_bytes(state_layers) * static_cast<uint64_t>(n_state_slots);
  mp.page_size = o.page_size;
  mp.min_pages = mo.max_pages_per_seq;
  mp.max_useful_pages = static_cast<int64_t>(mo.max_pages_per_seq) * o.max_running_requests * kMaxChoices;
  mp.num_pages = o.num_pages;
  mp.num_tokens = o.num_tokens;
  add_expert_plan(mp, *e->model_, session.expert_options, so.moe);
  FT_ASSIGN_OR_RETURN(e->plan_, plan_memory(mp));
  FT_LOG(kInfo) << e->plan_.describe();
  if (e->model_->expert_store()) {
    FT_ASSIGN_OR_RETURN(e->experts_, attach_expert_cache(*e->backend_, *e->model_, session.expert_options,
                                                         e->plan_.expert_slots));
    if (session.expert_options.backend == MoeBackend::kHybrid)
      e->share_tuner_ = std::make_unique<ShareTuner>(session.expert_options.fetch_share);
    e->stats_.moe_backend = moe_backend_name(session.expert_options.backend);
    e->stats_.expert_slots = e->plan_.expert_slots;
    e->stats_.expert_keys = e->plan_.expert_keys;
    e->stats_.fetch_share = e->experts_->fetch_share();
  }
  // Graph replay pads decode steps with sequences that write to one scratch page beyond the plan.
  const bool graphs = o.cuda_graph && !e->backend_->device().is_cpu() && state_layers.empty();
  FT_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(*e->backend_, layers, act,
                                                  static_cast<int32_t>(e->plan_.kv_pages) + (graphs ? 1 : 0),
                                                  o.page_size, state_layers, n_state_slots));
  e->kv_ = std::make_unique<KvCache>(std::move(kv));
  if (graphs) {
    FT_ASSIGN_OR_RETURN(e->graphs_, GraphRunner::create(*e->model_, *e->backend_, *e->kv_));
  }
  if (!e->backend_->device().is_cpu()) {
    FT_ASSIGN_OR_RETURN(DeviceSampler ds, DeviceSampler::create(*e->backend_, mo.max_seqs));
    e->device_sampler_ = std::make_unique<DeviceSampler>(std::move(ds));
  }

  SchedulerLimits limits;
  limits.max_running = o.max_running_requests;
  limits.max_step_tokens = mo.max_tokens;
  limits.max_seqs = mo.max_seqs;
  limits.page_size = o.page_size;
  limits.max_pages_per_seq = mo.max_pages_per_seq;
  e->scheduler_ = std::make_unique<Scheduler>(*e->kv_, limits);
  e->stats_.kv_pages_total = static_cast<int32_t>(e->plan_.kv_pages);
  e->thread_ = std::thread([p = e.get()] { p->loop(); });
  return std::unique_ptr<Engine>(std::move(e));
}

EngineImpl::~EngineImpl() { shutdown(); }

void EngineImpl::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

namespace {
Status invalid_request(const std::string& m) { return {StatusCode::kInvalidRequest, m}; }
bool finite_in(float v, float lo, float hi) { return std::isfinite(v) && v >= lo && v <= hi; }
}  // namespace

Status EngineImpl::validate(const GenerateRequest& r) const {
  const int64_t vocab = model_->config().vocab_size;
  if (r.prompt.empty()) return invalid_request("the prompt is empty");
  if (static_cast<int64_t>(r.prompt.size()) >= context_)
    return invalid_request("the prompt has " + std::to_string(r.prompt.size()) +
                           " tokens; the context length is " + std::to_string(context_));
  for (int32_t t : r.prompt)
    if (t < 0 || t >= vocab) return invalid_request("prompt token id " + std::to_string(t) + " is out of range");
  for (int32_t t : r.stop_token_ids)
    if (t < 0 || t >= vocab) return invalid_request("stop token id " + std::to_string(t) + " is out of range");
  if (r.max_tokens < 1) return invalid_request("max_tokens must be at least 1");
  if (r.n < 1 || r.n > kMaxChoices) return invalid_request("n must be between 1 and " + std::to_string(kMaxChoices));
  const SamplingParams& s = r.sampling;
  if (!finite_in(s.temperature, 0.0f, 100.0f)) return invalid_request("temperature must be in [0, 100]");
  if (!(s.top_p > 0.0f && s.top_p <= 1.0f)) return invalid_request("top_p must be in (0, 1]");
  if (s.top_k < 0) return invalid_request("top_k must be >= 0");
  if (!finite_in(s.min_p, 0.0f, 1.0f)) return invalid_request("min_p must be in [0, 1]");
  if (!finite_in(s.repetition_penalty, 1e-6f, 100.0f)) return invalid_request("repetition_penalty must be > 0");
  if (!finite_in(s.presence_penalty, -2.0f, 2.0f)) return invalid_request("presence_penalty must be in [-2, 2]");
  if (!finite_in(s.frequency_penalty, -2.0f, 2.0f)) return invalid_request("frequency_penalty must be in [-2, 2]");
  if (s.logprobs > kMaxLogprobs) return invalid_request("at most " + std::to_string(kMaxLogprobs) + " logprobs");
  return ok_status();
}

Result<std::shared_ptr<RequestStream>> EngineImpl::submit(GenerateRequest params) {
  FT_RETURN_IF_ERROR(validate(params));
  auto r = std::make_unique<Request>();
  r->id = next_id_.fetch_add(1);
  r->channel = std::make_shared<StreamChannel>(r->id, params.n);
  if (!params.ignore_eos) r->stop_ids = model_->config().eos_token_ids;
  r->stop_ids.insert(r->stop_ids.end(), params.stop_token_ids.begin(), params.stop_token_ids.end());
  r->usage.prompt_tokens = static_cast<int32_t>(params.prompt.size());
  Choice c;
  c.tokens = params.prompt;
  const uint64_t seed = params.sampling.seed ? *params.sampling.seed : std::random_device{}();
  c.sampler = std::make_unique<SamplerState>(params.sampling, params.prompt, seed);
  r->choices.push_back(std::move(c));
  r->params = std::move(params);
  std::shared_ptr<RequestStream> stream = r->channel;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return Status(StatusCode::kAborted, "the engine is shutting down");
    inbox_.push_back(std::move(r));
  }
  wake_.notify_all();
  return stream;
}

void EngineImpl::abort(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    abort_inbox_.emplace_back(id, -1);
  }
  wake_.notify_all();
}

void EngineImpl::stop_choice(uint64_t id, int32_t choice) {
  if (choice < 0) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    abort_inbox_.emplace_back(id, choice);
  }
  wake_.notify_all();
}

EngineStats EngineImpl::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void EngineImpl::emit_token(Request& r, Choice& c, const SampleResult& s) {
  c.tokens.push_back(s.token);
  ++c.n_generated;
  ++r.usage.completion_tokens;
  TokenEvent e;
  e.choice = c.index;
  e.has_token = true;
  e.token = s.token;
  e.logprob = s.logprob;
  e.top = s.top;
  e.emitted_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (std::find(r.stop_ids.begin(), r.stop_ids.end(), s.token) != r.stop_ids.end()) {
    e.finish = FinishReason::kStop;
    e.stopped_by_token = true;
  } else if (c.n_generated >= r.params.max_tokens || static_cast<int32_t>(c.tokens.size()) >= context_) {
    e.finish = FinishReason::kLength;
  }
  e.usage = r.usage;
  if (e.finish != FinishReason::kNone) {
    c.finish = e.finish;
    c.kv.release(*kv_);
  }
  r.channel->push(std::move(e));
}

void EngineImpl::sample_entry(const StepEntry& entry, const float* row, const SampleResult* drawn) {
  Request& r = *entry.request;
  // Preempted by an earlier entry's fork in this step: it recomputes these tokens when re-admitted.
  if (entry.epoch != r.epoch) return;
  const int64_t vocab = model_->config().vocab_size;
  if (entry.choice == 0 && !r.forked && r.params.n > 1) {
    Status st = scheduler_->fork(r, *backend_);
    if (!st.ok()) {
      if (r.phase != RequestPhase::kQueued) scheduler_->fail(r, st);  // queued: preempted, resumes later
      return;
    }
    for (auto& c : r.choices)
      if (!c.sampler) {
        const uint64_t seed = r.params.sampling.seed ? *r.params.sampling.seed + static_cast<uint64_t>(c.index)
                                                     : std::random_device{}();
        c.sampler = std::make_unique<SamplerState>(r.params.sampling, r.params.prompt, seed);
      }
    for (auto& c : r.choices) {
      row_copy_.assign(row, row + vocab);
      emit_token(r, c, sample_token(row_copy_, *c.sampler));
    }
  } else {
    Choice& c = r.choices[static_cast<size_t>(entry.choice)];
    if (drawn) {
      emit_token(r, c, *drawn);
    } else {
      row_copy_.assign(row, row + vocab);
      emit_token(r, c, sample_token(row_copy_, *c.sampler));
    }
  }
  bool decoding = true;
  for (const auto& c : r.choices)
    if (!c.done() && c.n_pending() != 1) decoding = false;
  if (r.phase == RequestPhase::kPrefilling && decoding && (r.forked || r.params.n == 1))
    r.phase = RequestPhase::kDecoding;
  if (r.all_done()) r.phase = RequestPhase::kFinished;
}

void EngineImpl::run_step(StepPlan& plan) {
  const Status st = graphs_ && graphs_->accepts(plan.batch) ? graphs_->run(plan.batch, logits_)
                                                             : model_->forward(plan.batch, *kv_, logits_);
  if (!st.ok()) {
    FT_LOG(kError) << "forward failed: " << st.to_string();
    for (const auto& e : plan.entries)
      if (e.request->phase != RequestPhase::kFinished) scheduler_->fail(*e.request, st);
    return;
  }
  scheduler_->commit(plan);
  if (sample_on_device(plan)) return;
  const int64_t vocab = model_->config().vocab_size;
  const int64_t rows = static_cast<int64_t>(plan.batch.logit_rows.size());
  host_logits_.resize(static_cast<size_t>(rows * vocab));
  Tensor host = Tensor::make(DType::kF32, {rows, vocab},
                             wrap_host(host_logits_.data(), host_logits_.size() * sizeof(float), nullptr));
  Status copied = backend_->copy(logits_.slice(0, 0, rows), host);
  if (copied.ok()) copied = backend_->stream().synchronize();
  FT_CHECK_MSG(copied.ok(), "logits copy failed");
  int64_t row = 0;
  for (const auto& e : plan.entries)
    if (e.logit_row >= 0) sample_entry(e, &host_logits_[static_cast<size_t>(row++ * vocab)]);
}

bool EngineImpl::sample_on_device(const StepPlan& plan) {
  if (!device_sampler_) return false;
  device_states_.clear();
  for (const auto& e : plan.entries) {
    if (e.logit_row < 0) continue;
    const Request& r = *e.request;
    if (e.choice == 0 && !r.forked && r.params.n > 1) return false;  // the fork samples every choice from one row
    SamplerState* st = r.choices[static_cast<size_t>(e.choice)].sampler.get();
    if (!DeviceSampler::can_sample(st->params())) return false;
    device_states_.push_back(st);
  }
  const Status st = device_sampler_->sample(logits_, device_states_, device_results_);
  FT_CHECK_MSG(st.ok(), "device sampling failed");
  size_t row = 0;
  for (const auto& e : plan.entries)
    if (e.logit_row >= 0) {
      sample_entry(e, nullptr, &device_results_[row]);
      ++row;
    }
  return true;
}

void EngineImpl::update_stats(const StepPlan& plan, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.running = scheduler_->n_running();
  stats_.queued = scheduler_->n_queued() + static_cast<int32_t>(inbox_.size());
  stats_.kv_pages_used = kv_->pool().n_used() - (graphs_ ? 1 : 0);
  stats_.state_slots_used = kv_->states().n_used();
  stats_.prompt_tokens += plan.n_prefill_tokens;
  stats_.generated_tokens += plan.n_decode_tokens;
  stats_.preemptions = scheduler_->n_preemptions();
  if (seconds > 0 && !plan.empty()) {
    constexpr double kKeep = 0.8;  // exponential moving average over steps
    auto ema = [&](double& v, double x) { v = v == 0 ? x : kKeep * v + (1 - kKeep) * x; };
    if (plan.n_decode_tokens) ema(stats_.decode_tokens_per_s, plan.n_decode_tokens / seconds);
    if (plan.n_prefill_tokens) ema(stats_.prefill_tokens_per_s, plan.n_prefill_tokens / seconds);
  }
}

void EngineImpl::check_memory_after_warmup() {
  if (device_bytes_measured_ || backend_->device().is_cpu() || stats_.generated_tokens == 0) return;
  auto m = backend_->memory_info();
  if (!m.ok()) return;
  device_bytes_measured_ = true;
  const uint64_t in_use = m->total - m->free - device_used_at_start_;
  const uint64_t planned = plan_.weights + plan_.workspace + plan_.state_bytes + plan_.expert_cache_bytes + plan_.kv_bytes;
  FT_LOG(kInfo) << "device memory after warm-up: " << in_use / (1 << 20) << " MiB in use by the engine, planned "
                << planned / (1 << 20) << " MiB, budget " << plan_.budget / (1 << 20) << " MiB"
                << (in_use > plan_.budget ? " (over the budget)" : "");
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.device_bytes_in_use = in_use;
}

void EngineImpl::update_expert_stats(const StepPlan& plan, double seconds, bool captured) {
  if (!experts_) return;
  step_seconds_ += seconds;
  // The tuner learns from decode steps only, and not from one that captured a graph (hybrid recaptures when the
  // share crosses 1: that step's time would count the capture against the share).
  if (share_tuner_ && plan.n_prefill_tokens == 0 && plan.n_decode_tokens > 0 && !captured &&
      share_tuner_->observe(1e3 * seconds)) {
    const Status st = experts_->set_fetch_share(share_tuner_->share());
    if (!st.ok()) {
      FT_LOG(kWarn) << "hybrid fetch share: " << st.to_string();
    }
  }
  if (++steps_since_expert_stats_ < 16 && !scheduler_->idle()) return;
  steps_since_expert_stats_ = 0;
  auto layers = experts_->stats();
  if (!layers.ok()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.expert_layers.clear();
  for (const auto& l : *layers) stats_.expert_layers.push_back({l.hits, l.fetched, l.cpu, l.copy_ms, l.cpu_ms});
  stats_.step_seconds = step_seconds_;
  stats_.expert_bytes_fetched = experts_->bytes_fetched(*layers);
  stats_.fetch_share = experts_->fetch_share();
}

void EngineImpl::loop() {
  StepPlan plan;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !inbox_.empty() || !abort_inbox_.empty() || !scheduler_->idle(); });
      for (auto& r : inbox_) scheduler_->enqueue(std::move(r));
      inbox_.clear();
      for (const auto& [id, choice] : abort_inbox_) scheduler_->abort(id, choice);
      abort_inbox_.clear();
      if (stop_) break;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t captures = graphs_ ? graphs_->captures() : 0;
    scheduler_->schedule(plan);
    if (!plan.empty()) run_step(plan);
    scheduler_->reap();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // first: update_stats publishes the step (a drained engine reads both)
    update_expert_stats(plan, seconds, graphs_ && graphs_->captures() != captures);
    update_stats(plan, seconds);
    check_memory_after_warmup();
  }
  scheduler_->abort_all();
  scheduler_->schedule(plan);  // applies the aborts: every request ends with kAborted
  scheduler_->reap();
  update_stats(StepPlan{}, 0);
}

}  // namespace ft
