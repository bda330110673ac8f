// DeviceSampler: samples a step's logit rows with the backend's `sample` op and copies back only the chosen ids
// and logprobs. Penalties stay on the host path (sampler.h): a row with any penalty is not device-samplable.
#pragma once

#include <cstdlib>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "engine/sampler.h"

namespace ft {

class DeviceSampler {
 public:
  // Buffers for up to max_rows rows of kMaxLogprobs alternatives.
  static Result<DeviceSampler> create(Backend& backend, int64_t max_rows);
  // No repetition, presence or frequency penalty.
  static bool can_sample(const SamplingParams& p);
  // Samples rows [0, states.size()) of logits [>= rows, vocab] f32, row i with states[i] (which draws its u and
  // observes the chosen token); waits for the result.
  Status sample(const Tensor& logits, const std::vector<SamplerState*>& states, std::vector<SampleResult>& out);

 private:
  struct FreeHost {
    void operator()(void* p) const { std::free(p); }
  };
  explicit DeviceSampler(Backend& backend) : backend_(&backend) {}
  Backend* backend_;
  Tensor params_, ids_, logprobs_, top_ids_;  // [R, 5] f32, [R] i32, [R, 1 + kMaxLogprobs] f32, [R, kMaxLogprobs] i32
  // Their host sides in one page-locked block, so that the copies are asynchronous and one wait ends them all.
  std::unique_ptr<void, FreeHost> host_block_;
  std::shared_ptr<Buffer> pin_;  // declared after the block: unpinned before it is freed
  float *host_params_ = nullptr, *host_logprobs_ = nullptr;
  int32_t *host_ids_ = nullptr, *host_top_ = nullptr;
};

}  // namespace ft
