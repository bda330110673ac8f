// Scalar reference ops: float64 accumulation, any float dtype, no tuning. Ground truth for every backend.
#pragma once

#include "backend/ops.h"

namespace ft {

const OpTable& ref_op_table();

namespace ref {
FT_DECLARE_OPS()
}  // namespace ref

}  // namespace ft
