// The CUDA ops: bf16 or f32 activations, bf16 or f32 weights, fp32 accumulation; one .cu per op family.
#pragma once

#include "backend/ops.h"

namespace ft {

const OpTable& cuda_op_table();

namespace cuda {
bool supports(Op op, DType act, DType weight);
FT_DECLARE_OPS()
}  // namespace cuda

}  // namespace ft
