// ExpertCache: slot path (lookup -> fill and/or CPU job -> expert kernels on the slots) and streamed path (chunks
// of every layer's experts through a ring of device buffers) — see the header.
#include "moe/expert_cache.h"

#include <algorithm>
#include <chrono>
#include <mutex>

namespace ft {
namespace {

std::mutex g_cpu_status_mutex;  // CPU jobs run on driver threads

Tensor rows(const Tensor& t, int64_t n) { return t.slice(0, 0, n); }

// Steps of at most this many tokens take the slot path: one layer's distinct experts in a step, at most
// min(n k, n_expert), must fit the slots.
int64_t slot_tokens(const ExpertShape& s, const ExpertCacheOptions& o) {
  const int64_t fit = o.n_slots >= s.n_expert ? o.max_tokens : o.n_slots / std::max<int64_t>(o.n_expert_used, 1);
  return std::min<int64_t>({o.slot_path_max_tokens, o.max_tokens, fit});
}

bool streams(const ExpertShape& s, const ExpertCacheOptions& o) { return o.max_tokens > slot_tokens(s, o); }

int64_t chunk_experts(const ExpertShape& s, const ExpertCacheOptions& o) {
  return std::clamp<int64_t>(o.stream_chunk_experts, 1, s.n_expert);
}

int64_t ring_size(const ExpertCacheOptions& o) { return std::max<int64_t>(o.stream_buffers, 2); }

bool has_cpu_side(const ExpertCacheOptions& o) { return o.backend == MoeBackend::kCpu || o.backend == MoeBackend::kHybrid; }

}  // namespace

uint64_t ExpertCache::slot_bytes(const ExpertShape& s) {
  return (s.layout().end + ExpertStore::kRecordAlign - 1) / ExpertStore::kRecordAlign * ExpertStore::kRecordAlign + 12;
}

uint64_t ExpertCache::fixed_bytes(const ExpertShape& s, const ExpertCacheOptions& o) {
  const uint64_t keys = static_cast<uint64_t>(s.n_layers * s.n_expert), k = static_cast<uint64_t>(o.n_expert_used);
  const uint64_t tokens = static_cast<uint64_t>(std::min(o.slot_path_max_tokens, o.max_tokens));
  const uint64_t d = static_cast<uint64_t>(s.d);
  uint64_t b = keys * 12 + static_cast<uint64_t>(s.n_layers) * (24 + 32) + tokens * k * 12 + 4096;
  const bool may_stream = o.max_tokens > std::min<int64_t>(o.slot_path_max_tokens, s.n_layers * s.n_expert / std::max<int64_t>(o.n_expert_used, 1));
  if (may_stream)
    b += static_cast<uint64_t>(ring_size(o) * chunk_experts(s, o)) * (slot_bytes(s) - 12) +
         static_cast<uint64_t>(o.max_tokens) * (k * 4 + d * 4);
  return b;
}

Result<std::unique_ptr<ExpertCache>> ExpertCache::create(Backend& device, ExpertStore& store,
                                                         const ExpertCacheOptions& o) {
  if (o.backend != MoeBackend::kOffload && o.backend != MoeBackend::kCpu && o.backend != MoeBackend::kHybrid)
    return invalid_argument(std::string("expert cache: backend ") + moe_backend_name(o.backend));
  if (o.n_slots < o.n_expert_used || o.n_slots < 1)
    return invalid_argument("expert cache: " + std::to_string(o.n_slots) + " slots cannot hold one token's " +
                            std::to_string(o.n_expert_used) + " experts (raise --moe-cache-size or the budget)");
  if (o.n_slots > INT32_MAX || store.n_keys() > INT32_MAX) return invalid_argument("expert cache: too many slots");
  std::unique_ptr<ExpertCache> c(new ExpertCache(device, store, o));
  FT_RETURN_IF_ERROR(store.pin(device));
  FT_RETURN_IF_ERROR(c->allocate());
  FT_RETURN_IF_ERROR(c->set_fetch_share(o.backend == MoeBackend::kOffload ? 1.0
                                        : o.backend == MoeBackend::kCpu   ? 0.0
                                                                          : o.fetch_share));
  FT_RETURN_IF_ERROR(c->preload());
  return c;
}

ExpertCache::~ExpertCache() { (void)device_.stream().synchronize(); }  // graphs may still read the slots

Status ExpertCache::allocate() {
  const ExpertShape& sh = store_.shape();
  const int64_t S = slot_tokens(store_.shape(), options_), k = options_.n_expert_used, R = static_cast<int64_t>(store_.record_bytes());
  const int64_t n_slots = options_.n_slots, n_keys = store_.n_keys();
  if (!ops().moe_cache_lookup || !ops().moe_cache_fill || !ops().moe_chunk_ids)
    return unsupported(std::string("expert cache: the ") + device_.name() + " backend has no expert cache ops");
  auto take = [&](DType dt, std::initializer_list<int64_t> shape) { return device_.empty(dt, shape); };
  FT_ASSIGN_OR_RETURN(pool_, take(DType::kU8, {n_slots, R}));
  FT_ASSIGN_OR_RETURN(tables_.slot_of, take(DType::kI32, {n_keys}));
  FT_ASSIGN_OR_RETURN(tables_.key_of, take(DType::kI32, {n_slots}));
  FT_ASSIGN_OR_RETURN(tables_.lru, take(DType::kI32, {2, n_slots + 1}));
  FT_ASSIGN_OR_RETURN(tables_.mark, take(DType::kI64, {n_keys}));
  FT_ASSIGN_OR_RETURN(tables_.calls, take(DType::kI64, {1}));
  FT_ASSIGN_OR_RETURN(tables_.share, take(DType::kF32, {1}));
  FT_ASSIGN_OR_RETURN(tables_.stats, take(DType::kI64, {sh.n_layers, 3}));
  FT_ASSIGN_OR_RETURN(tables_.miss_keys, take(DType::kI32, {std::max<int64_t>(S * k, 1)}));
  FT_ASSIGN_OR_RETURN(slot_ids_, take(DType::kI32, {std::max<int64_t>(S, 1), k}));
  FT_ASSIGN_OR_RETURN(fills_, take(DType::kI32, {1 + S * k}));
  FT_ASSIGN_OR_RETURN(fill_timing_, take(DType::kI64, {sh.n_layers, 4}));  // zero-filled, as the op starts
  cpu_ms_.assign(static_cast<size_t>(sh.n_layers), 0.0);
  stream_ms_.assign(static_cast<size_t>(sh.n_layers), 0.0);
  FT_ASSIGN_OR_RETURN(side_, device_.create_stream());

  auto mapped = [&](DType dt, int64_t rows_, int64_t cols, Tensor& host, Tensor& dev) -> Status {
    FT_ASSIGN_OR_RETURN(host, Tensor::host(dt, {std::max<int64_t>(rows_, 1), cols}));
    FT_ASSIGN_OR_RETURN(auto buf, device_.map_host(host.data(), host.nbytes()));
    // The mapping keeps the host tensor's memory alive through `host`, which this cache holds as long as `dev`.
    dev = Tensor::make(dt, {std::max<int64_t>(rows_, 1), cols}, std::move(buf));
    return ok_status();
  };
  if (has_cpu_side(options_)) {
    BackendOptions bo;
    bo.n_threads = options_.cpu_threads;
    bo.pin_threads = true;  // the pool runs every step: keep its workers on their cores
    FT_ASSIGN_OR_RETURN(cpu_, create_backend("cpu", bo));
    FT_RETURN_IF_ERROR(mapped(DType::kI32, S, k, cpu_ids_host_, cpu_ids_dev_));
    FT_RETURN_IF_ERROR(mapped(DType::kF32, S, sh.d, x_host_, x_dev_));
    FT_RETURN_IF_ERROR(mapped(DType::kF32, S, k, w_host_, w_dev_));
    FT_RETURN_IF_ERROR(mapped(DType::kF32, S, sh.d, y_host_, y_dev_));
    const size_t ws = cpu_->ops().moe_workspace_bytes(std::max<int64_t>(S, 1), k, sh.d, sh.inter);
    FT_ASSIGN_OR_RETURN(cpu_ws_, Tensor::host(DType::kU8, {static_cast<int64_t>(ws)}));
  } else {
    FT_ASSIGN_OR_RETURN(cpu_ids_dev_, take(DType::kI32, {std::max<int64_t>(S, 1), k}));
  }
  if (streams(store_.shape(), options_)) {
    const int64_t C = chunk_experts(sh, options_), B = ring_size(options_);
    ring_.resize(static_cast<size_t>(B));
    for (Tensor& buf : ring_) {
      FT_ASSIGN_OR_RETURN(buf, take(DType::kU8, {C, R}));
    }
    ring_key_.assign(static_cast<size_t>(B), -1);
    ring_ready_.resize(static_cast<size_t>(B));
    ring_free_.resize(static_cast<size_t>(B));
    FT_ASSIGN_OR_RETURN(chunk_ids_, take(DType::kI32, {options_.max_tokens, k}));
    FT_ASSIGN_OR_RETURN(chunk_out_, take(DType::kF32, {options_.max_tokens, sh.d}));  // summed into any out dtype
  }
  return ok_status();
}

Status ExpertCache::preload() {
  const ExpertShape& sh = store_.shape();
  const int64_t n_slots = options_.n_slots, n_keys = store_.n_keys(), n_fill = std::min(n_slots, n_keys);
  FT_ASSIGN_OR_RETURN(Tensor slot_of, Tensor::host(DType::kI32, {n_keys}));
  FT_ASSIGN_OR_RETURN(Tensor key_of, Tensor::host(DType::kI32, {n_slots}));
  FT_ASSIGN_OR_RETURN(Tensor lru, Tensor::host(DType::kI32, {2, n_slots + 1}));
  FT_ASSIGN_OR_RETURN(Tensor fills, Tensor::host(DType::kI32, {1 + n_fill}));
  std::fill_n(slot_of.ptr<int32_t>(), n_keys, -1);
  std::fill_n(key_of.ptr<int32_t>(), n_slots, -1);
  // Slot i holds expert i / L of layer i % L: every layer starts with the same share of the cache.
  fills.ptr<int32_t>()[0] = static_cast<int32_t>(n_fill);
  for (int64_t i = 0; i < n_fill; ++i) {
    const int64_t key = (i % sh.n_layers) * sh.n_expert + i / sh.n_layers;
    slot_of.ptr<int32_t>()[key] = static_cast<int32_t>(i);
    key_of.ptr<int32_t>()[i] = static_cast<int32_t>(key);
    fills.ptr<int32_t>()[1 + i] = static_cast<int32_t>(i);
  }
  // The LRU ring in slot order: slot 0 most recently used, the last slot least.
  int32_t* prev = lru.ptr<int32_t>();
  int32_t* next = prev + n_slots + 1;
  for (int64_t s = 0; s <= n_slots; ++s) {
    next[s] = static_cast<int32_t>((s + 1) % (n_slots + 1));
    prev[s] = static_cast<int32_t>((s + n_slots) % (n_slots + 1));
  }
  FT_RETURN_IF_ERROR(device_.copy(slot_of, tables_.slot_of));
  FT_RETURN_IF_ERROR(device_.copy(key_of, tables_.key_of));
  FT_RETURN_IF_ERROR(device_.copy(lru, tables_.lru));
  FT_ASSIGN_OR_RETURN(Tensor dev_fills, device_.empty(DType::kI32, {1 + n_fill}));
  FT_RETURN_IF_ERROR(device_.copy(fills, dev_fills));
  FT_RETURN_IF_ERROR(
      ops().moe_cache_fill(store_.device_records(), pool_, dev_fills, tables_.key_of, Tensor{}, device_.stream()));
  return device_.stream().synchronize();
}

Status ExpertCache::set_fetch_share(double share) {
  const bool had_cpu_path = cpu_path_active();
  share_ = std::clamp(share, 0.0, 1.0);
  if (cpu_path_active() != had_cpu_path) ++epoch_;
  float v = static_cast<float>(share_);
  const Tensor host = Tensor::make(DType::kF32, {1}, wrap_host(&v, sizeof v, nullptr));
  FT_RETURN_IF_ERROR(device_.copy(host, tables_.share));
  return device_.stream().synchronize();
}

Status ExpertCache::forward(Stream& s, int64_t layer, const Tensor& x, const Tensor& ids, const Tensor& weights,
                            const Tensor& out, const Tensor& workspace) {
  if (layer < 0 || layer >= store_.shape().n_layers) return invalid_argument("expert cache: moe layer out of range");
  const int64_t n = x.dim(0);
  if (n > options_.max_tokens) return invalid_argument("expert cache: step larger than planned");
  if (n <= slot_tokens(store_.shape(), options_)) return forward_slots(s, layer, x, ids, weights, out, workspace);
  return forward_streamed(s, layer, x, ids, weights, out, workspace);
}

Status ExpertCache::forward_slots(Stream& s, int64_t layer, const Tensor& x, const Tensor& ids, const Tensor& weights,
                                  const Tensor& out, const Tensor& workspace) {
  const int64_t n = x.dim(0), k = ids.dim(1);
  const Tensor slot_ids = rows(slot_ids_, n), cpu_ids = rows(cpu_ids_dev_, n);
  const Tensor fills = fills_.slice(0, 0, 1 + n * k);
  FT_RETURN_IF_ERROR(ops().moe_cache_lookup(ids, tables_, slot_ids, cpu_ids, fills,
                                            {layer, store_.shape().n_expert}, s));
  // Hybrid settled on fetching everything runs exactly the offload path (no CPU job, no host node).
  const bool cpu_side = cpu_path_active();
  if (cpu_side) {  // the CPU's share runs on a driver thread while the device fetches and computes its own
    FT_RETURN_IF_ERROR(ops().convert(x, rows(x_dev_, n), s));
    FT_RETURN_IF_ERROR(ops().convert(weights, rows(w_dev_, n), s));
    FT_ASSIGN_OR_RETURN(auto inputs_ready, device_.record(s));
    FT_RETURN_IF_ERROR(device_.wait(*side_, *inputs_ready));
    CpuJob*& job = job_of_[{layer, n}];
    if (!job) job = &jobs_.emplace_back(CpuJob{this, layer, n});
    FT_RETURN_IF_ERROR(device_.launch_host(*side_, &ExpertCache::run_cpu_job, job));
  }
  if (options_.backend != MoeBackend::kCpu)
    FT_RETURN_IF_ERROR(ops().moe_cache_fill(store_.device_records(), pool_, fills, tables_.key_of,
                                            fill_timing_.select(0, layer), s));
  FT_RETURN_IF_ERROR(ops().moe_experts(x, slot_ids, weights, store_.gate_up_view(pool_, 0, options_.n_slots),
                                       store_.down_view(pool_, 0, options_.n_slots), out, workspace,
                                       store_.params_view(pool_, 0, options_.n_slots), s));
  if (!cpu_side) return ok_status();
  FT_ASSIGN_OR_RETURN(auto cpu_done, device_.record(*side_));
  FT_RETURN_IF_ERROR(device_.wait(s, *cpu_done));
  return ops().add(out, rows(y_dev_, n), out, s);  // the CPU's f32 sum, read over PCIe
}

void ExpertCache::run_cpu_job(void* p) {
  const auto* job = static_cast<const CpuJob*>(p);
  job->cache->compute_on_cpu(job->layer, job->n);
}

void ExpertCache::compute_on_cpu(int64_t layer, int64_t n) {
  const int32_t* ids = cpu_ids_host_.ptr<const int32_t>();
  const int64_t k = cpu_ids_host_.dim(1);
  if (std::all_of(ids, ids + n * k, [](int32_t e) { return e < 0; })) {  // nothing left to the CPU this time
    std::fill_n(y_host_.ptr<float>(), n * y_host_.dim(1), 0.0f);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const Status st =
      cpu_->ops().moe_experts(rows(x_host_, n), rows(cpu_ids_host_, n), rows(w_host_, n), store_.gate_up(layer),
                              store_.down(layer), rows(y_host_, n), cpu_ws_, store_.params(layer), cpu_->stream());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard<std::mutex> lock(g_cpu_status_mutex);
  cpu_ms_[static_cast<size_t>(layer)] += ms;
  if (!st.ok() && cpu_status_.ok()) cpu_status_ = st;
}

Status ExpertCache::cpu_status() const {
  std::lock_guard<std::mutex> lock(g_cpu_status_mutex);
  return cpu_status_;
}

Status ExpertCache::issue_chunk_copy(int64_t key, int64_t b) {
  const ExpertShape& sh = store_.shape();
  const int64_t C = chunk_experts(sh, options_), per_layer = (sh.n_expert + C - 1) / C;
  const int64_t layer = key / per_layer, first = key % per_layer * C, count = std::min(C, sh.n_expert - first);
  const auto i = static_cast<size_t>(b);
  if (ring_free_[i]) FT_RETURN_IF_ERROR(device_.wait(*side_, *ring_free_[i]));
  FT_ASSIGN_OR_RETURN(std::shared_ptr<StreamEvent> start, device_.record_timed(*side_));
  FT_RETURN_IF_ERROR(device_.copy_on(*side_, store_.records().slice(0, layer * sh.n_expert + first, count),
                                     ring_[i].slice(0, 0, count)));
  FT_ASSIGN_OR_RETURN(ring_ready_[i], device_.record_timed(*side_));
  copies_.push_back({layer, std::move(start), ring_ready_[i]});
  ring_key_[i] = key;
  streamed_bytes_ += static_cast<uint64_t>(count) * store_.record_bytes();
  return ok_status();
}

Status ExpertCache::top_up_ring() {
  const ExpertShape& sh = store_.shape();
  const int64_t C = chunk_experts(sh, options_), total = sh.n_layers * ((sh.n_expert + C - 1) / C);
  const int64_t B = static_cast<int64_t>(ring_.size());
  // Not past the last layer's last chunk: the next prompt may be a while, and copies queued on the side stream
  // would hold up the decode steps' CPU jobs there (and their fills' PCIe) until they are done.
  for (; ring_queued_ < B && next_key_ < total; ++ring_queued_, ++next_key_)
    FT_RETURN_IF_ERROR(issue_chunk_copy(next_key_, (ring_head_ + ring_queued_) % B));
  return ok_status();
}

Status ExpertCache::forward_streamed(Stream& s, int64_t layer, const Tensor& x, const Tensor& ids,
                                     const Tensor& weights, const Tensor& out, const Tensor& workspace) {
  const ExpertShape& sh = store_.shape();
  const int64_t n = x.dim(0), C = chunk_experts(sh, options_), per_layer = (sh.n_expert + C - 1) / C;
  const int64_t B = static_cast<int64_t>(ring_.size());
  const Tensor local_ids = rows(chunk_ids_, n);
  if (copies_.size() > 4096) FT_RETURN_IF_ERROR(count_copies());  // a long run of prompts without stats()
  for (int64_t c = 0; c < per_layer; ++c) {
    const int64_t key = layer * per_layer + c;
    if (ring_queued_ == 0 || ring_key_[static_cast<size_t>(ring_head_)] != key) {
      ring_queued_ = 0;  // not the chunk the ring expected (a step that skipped layers): restart from this one
      next_key_ = key;
    }
    FT_RETURN_IF_ERROR(top_up_ring());
    const auto b = static_cast<size_t>(ring_head_);
    FT_RETURN_IF_ERROR(device_.wait(s, *ring_ready_[b]));
    const int64_t first = c * C, count = std::min(C, sh.n_expert - first);
    FT_RETURN_IF_ERROR(ops().moe_chunk_ids(ids, first, count, local_ids, s));
    const Tensor dst = c == 0 ? out : rows(chunk_out_, n);
    FT_RETURN_IF_ERROR(ops().moe_experts(x, local_ids, weights, store_.gate_up_view(ring_[b], 0, count),
                                         store_.down_view(ring_[b], 0, count), dst, workspace,
                                         store_.params_view(ring_[b], 0, count), s));
    if (c > 0) FT_RETURN_IF_ERROR(ops().add(out, dst, out, s));
    FT_ASSIGN_OR_RETURN(ring_free_[b], device_.record(s));
    ring_head_ = (ring_head_ + 1) % B;
    --ring_queued_;
  }
  return top_up_ring();  // the next layer's chunks copy while this layer's output moves on
}

Status ExpertCache::count_copies() {
  std::vector<double> ms(stream_ms_.size(), 0.0);  // committed only once every copy is read
  for (const TimedCopy& c : copies_) {
    FT_ASSIGN_OR_RETURN(const double one, device_.elapsed_ms(*c.start, *c.end));
    ms[static_cast<size_t>(c.layer)] += one;
  }
  for (size_t l = 0; l < ms.size(); ++l) stream_ms_[l] += ms[l];
  copies_.clear();
  return ok_status();
}

Result<std::vector<ExpertLayerStats>> ExpertCache::stats() {
  const int64_t L = store_.shape().n_layers;
  FT_ASSIGN_OR_RETURN(Tensor host, Tensor::host(DType::kI64, {L, 3}));
  FT_ASSIGN_OR_RETURN(Tensor timing, Tensor::host(DType::kI64, {L, 4}));
  FT_RETURN_IF_ERROR(device_.copy(tables_.stats, host));
  FT_RETURN_IF_ERROR(device_.copy(fill_timing_, timing));
  FT_RETURN_IF_ERROR(device_.stream().synchronize());
  FT_RETURN_IF_ERROR(count_copies());
  std::vector<ExpertLayerStats> out(static_cast<size_t>(L));
  std::lock_guard<std::mutex> lock(g_cpu_status_mutex);
  for (size_t l = 0; l < out.size(); ++l) {
    const int64_t* v = host.ptr<const int64_t>() + 3 * l;
    out[l] = {v[0], v[1], v[2], 1e-6 * static_cast<double>(timing.ptr<const int64_t>()[4 * l]) + stream_ms_[l],
              cpu_ms_[l]};
  }
  return out;
}

uint64_t ExpertCache::bytes_fetched(const std::vector<ExpertLayerStats>& layers) const {
  uint64_t records = 0;
  for (const auto& l : layers) records += static_cast<uint64_t>(l.fetched);
  return records * store_.record_bytes() + streamed_bytes_;
}

}  // namespace ft
