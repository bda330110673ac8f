// The CUDA backend's entry point: a Backend over one GPU (device memory, one stream, cuBLASLt).
#pragma once

#include <memory>

#include "backend/backend.h"

namespace ft {

// Fails with kUnsupported when no CUDA device is present.
Result<std::unique_ptr<Backend>> create_cuda_backend(const BackendOptions& options);

}  // namespace ft
