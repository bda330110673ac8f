// The bandwidths that decide where missed experts go, measured with the real paths: pinned host -> device
// through the copy engine and through the cache-fill kernel, the CPU expert kernels streaming expert weights,
// and device memory. `ft bench bw` writes them as the profile --moe-strategy auto reads.
#pragma once

#include "backend/backend.h"
#include "moe/expert_store.h"
#include "moe/moe_backend.h"

namespace ft {

// GB/s of cudaMemcpy-style copies from pinned host memory (bytes per copy: `bytes`).
Result<double> measure_h2d_copy(Backend& device, size_t bytes);
// GB/s of moe_cache_fill moving `n_records` records of `shape` from the pinned store into device slots.
Result<double> measure_h2d_fill(Backend& device, const ExpertShape& shape, int64_t n_records);
// GB/s of expert weights the CPU expert kernels read for one decode token (k experts of `shape`, cycling
// through `n_records` records, more than the last-level cache holds).
Result<double> measure_cpu_experts(const ExpertShape& shape, int64_t k, int64_t n_records, int threads);
// GB/s of device-to-device copies (bytes read + written): the best of several timings.
Result<double> measure_device_copy(Backend& device, size_t bytes);

}  // namespace ft
