// DeviceSampler: per-row parameters up, one sample op, the ids and logprobs down.
#include "engine/device_sampler.h"

#include <algorithm>

namespace ft {

Result<DeviceSampler> DeviceSampler::create(Backend& backend, int64_t max_rows) {
  if (!backend.ops().sample || !backend.ops().supports(Op::kSample, DType::kF32, DType::kF32))
    return unsupported(std::string("sample op on ") + backend.name());
  DeviceSampler d(backend);
  FT_ASSIGN_OR_RETURN(d.params_, backend.empty(DType::kF32, {max_rows, 5}));
  FT_ASSIGN_OR_RETURN(d.ids_, backend.empty(DType::kI32, {max_rows}));
  FT_ASSIGN_OR_RETURN(d.logprobs_, backend.empty(DType::kF32, {max_rows, 1 + kMaxLogprobs}));
  FT_ASSIGN_OR_RETURN(d.top_ids_, backend.empty(DType::kI32, {max_rows, kMaxLogprobs}));
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
  host_params_.resize(static_cast<size_t>(rows * 5));
  for (int64_t r = 0; r < rows; ++r) {
    const SamplingParams& p = states[static_cast<size_t>(r)]->params();
    n_top = std::max(n_top, p.logprobs);
    const float row[5] = {p.temperature, static_cast<float>(p.top_k), p.top_p, p.min_p,
                          static_cast<float>(states[static_cast<size_t>(r)]->uniform())};
    std::copy_n(row, 5, host_params_.begin() + r * 5);
  }
  auto host = [](auto& v, DType t, std::initializer_list<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    v.resize(static_cast<size_t>(n));
    return Tensor::make(t, shape, wrap_host(v.data(), v.size() * sizeof(v[0]), nullptr));
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
    s.token = host_ids_[static_cast<size_t>(r)];
    const float* l = &host_logprobs_[static_cast<size_t>(r * (1 + n_top))];
    s.logprob = l[0];
    for (int32_t j = 0; j < st.params().logprobs; ++j) s.top.push_back({host_top_[static_cast<size_t>(r * n_top + j)], l[1 + j]});
    st.observe(s.token);
  }
  return ok_status();
}

}  // namespace ft
