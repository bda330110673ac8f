// DeviceSampler: per-row parameters up, one sample op, the ids and logprobs down.
#include "engine/device_sampler.h"

#include <algorithm>
#include <cstddef>
#include <string>

namespace ft {

Result<DeviceSampler> DeviceSampler::create(Backend& backend, int64_t max_rows) {
  if (!backend.ops().sample || !backend.ops().supports(Op::kSample, DType::kF32, DType::kF32))
    return unsupported(std::string("sample op on ") + backend.name());
  DeviceSampler d(backend);
  FT_ASSIGN_OR_RETURN(d.params_, backend.empty(DType::kF32, {max_rows, 5}));
  FT_ASSIGN_OR_RETURN(d.ids_, backend.empty(DType::kI32, {max_rows}));
  FT_ASSIGN_OR_RETURN(d.logprobs_, backend.empty(DType::kF32, {max_rows, 1 + kMaxLogprobs}));
  FT_ASSIGN_OR_RETURN(d.top_ids_, backend.empty(DType::kI32, {max_rows, kMaxLogprobs}));
  constexpr size_t kPage = 4096;
  const size_t bytes[4] = {d.params_.nbytes(), d.ids_.nbytes(), d.logprobs_.nbytes(), d.top_ids_.nbytes()};
  size_t total = 0;
  for (size_t b : bytes) total += (b + 63) / 64 * 64;
  total = (total + kPage - 1) / kPage * kPage;
  d.host_block_.reset(std::aligned_alloc(kPage, total));
  if (!d.host_block_) return out_of_memory("DeviceSampler: host staging of " + std::to_string(total) + " bytes");
  FT_ASSIGN_OR_RETURN(d.pin_, backend.map_host(d.host_block_.get(), total));
  auto* at = static_cast<std::byte*>(d.host_block_.get());
  const auto take = [&](size_t b) {
    std::byte* p = at;
    at += (b + 63) / 64 * 64;
    return p;
  };
  d.host_params_ = reinterpret_cast<float*>(take(bytes[0]));
  d.host_ids_ = reinterpret_cast<int32_t*>(take(bytes[1]));
  d.host_logprobs_ = reinterpret_cast<float*>(take(bytes[2]));
  d.host_top_ = reinterpret_cast<int32_t*>(take(bytes[3]));
  return d;
}

bool DeviceSampler::can_sample(const SamplingParams& p) {
  return p.repetition_penalty == 1.0f && p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f;
}

Status DeviceSampler::sample(const Tensor& logits, const std::vector<SamplerState*>& states,
                             std::vector<SampleResult>& out) {
  const int64_t rows = static_cast<int64_t>(states.size());
  if (rows == 0) return ok_status();
  if (rows > params_.dim(0)) return invalid_argument("DeviceSampler: too many rows");
  int32_t n_top = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const SamplingParams& p = states[static_cast<size_t>(r)]->params();
    n_top = std::max(n_top, p.logprobs);
    const float row[5] = {p.temperature, static_cast<float>(p.top_k), p.top_p, p.min_p,
                          static_cast<float>(states[static_cast<size_t>(r)]->uniform())};
    std::copy_n(row, 5, host_params_ + r * 5);
  }
  auto host = [](auto* p, DType t, std::initializer_list<int64_t> shape) {  // a prefix of a page-locked array
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return Tensor::make(t, shape, wrap_host(p, static_cast<size_t>(n) * sizeof(*p), nullptr));
  };
  const Tensor params = params_.slice(0, 0, rows), ids = ids_.slice(0, 0, rows);
  const Tensor lp = logprobs_.reshape({logprobs_.numel()}).slice(0, 0, rows * (1 + n_top)).reshape({rows, 1 + n_top});
  const Tensor top = n_top ? top_ids_.reshape({top_ids_.numel()}).slice(0, 0, rows * n_top).reshape({rows, n_top})
                           : Tensor{};
  FT_RETURN_IF_ERROR(backend_->copy(host(host_params_, DType::kF32, {rows, 5}), params));
  FT_RETURN_IF_ERROR(backend_->ops().sample(logits.slice(0, 0, rows), params, ids, lp, top, backend_->stream()));
  FT_RETURN_IF_ERROR(backend_->copy(ids, host(host_ids_, DType::kI32, {rows})));
  FT_RETURN_IF_ERROR(backend_->copy(lp, host(host_logprobs_, DType::kF32, {rows, 1 + n_top})));
  if (n_top) FT_RETURN_IF_ERROR(backend_->copy(top, host(host_top_, DType::kI32, {rows, n_top})));
  FT_RETURN_IF_ERROR(backend_->stream().synchronize());
  out.assign(static_cast<size_t>(rows), SampleResult{});
  for (int64_t r = 0; r < rows; ++r) {
    SamplerState& st = *states[static_cast<size_t>(r)];
    SampleResult& s = out[static_cast<size_t>(r)];
    s.token = host_ids_[r];
    const float* l = host_logprobs_ + r * (1 + n_top);
    s.logprob = l[0];
    for (int32_t j = 0; j < st.params().logprobs; ++j) s.top.push_back({host_top_[r * n_top + j], l[1 + j]});
    st.observe(s.token);
  }
  return ok_status();
}

}  // namespace ft
