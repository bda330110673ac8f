// What `ft make-model` writes for an architecture: every tensor's Hugging Face name and shape, and the
// distribution its random values are drawn from (a function of seed, tensor index and element index only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "freetoken/status.h"
#include "io/model_config.h"

namespace ft::cli {

enum class Init {
  kWeight,    // uniform with std 0.02 (projections, embeddings, routers, conv)
  kNorm,      // 1 + U(-0.1, 0.1): a norm weight the model multiplies by
  kZeroNorm,  // U(-0.1, 0.1): a zero-centred norm weight, applied as 1 + w
  kALog,      // log(U(1, 16)): Gated DeltaNet decay rates
  kDtBias,    // U(-0.1, 0.1): Gated DeltaNet time-step bias
  // MXFP4 experts' u8 parts (io/mxfp4.h), values of about std 0.02 as kWeight's:
  kMxfp4Codes,   // `_blocks`: two uniform e2m1 codes a byte
  kMxfp4Scales,  // `_scales`: ue8m0 2^-8, 2^-7 or 2^-6
};

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  Init init = Init::kWeight;

  bool u8() const { return init == Init::kMxfp4Codes || init == Init::kMxfp4Scales; }
};

// The tensors a checkpoint of config c holds, in writing order, exactly as our loader reads them; with
// `mxfp4_experts` (gpt-oss only) its experts as the official checkpoints ship them, in MXFP4.
// kUnsupported for an architecture make-model does not know.
Result<std::vector<TensorSpec>> checkpoint_tensors(const ModelConfig& c, bool mxfp4_experts = false);

// Element i of tensor `id` drawn from `init` (a float init); any thread count gives the same values.
float random_value(uint64_t seed, uint64_t id, uint64_t i, Init init);
// Byte i of a u8 tensor `id` drawn from `init` (TensorSpec::u8), likewise.
uint8_t random_byte(uint64_t seed, uint64_t id, uint64_t i, Init init);

}  // namespace ft::cli
