// Optimised CPU ops: multithreaded on the stream's pool, vectorised for the run-time ISA level (isa.h).
// Activations f32; weights, embedding tables, norm weights, biases and KV caches f32 or bf16.
#pragma once

#include "backend/cpu/isa.h"
#include "backend/ops.h"

namespace ft {

const OpTable& cpu_op_table();

namespace cpu {
bool supports(Op op, DType act, DType weight);
FT_DECLARE_OPS()
}  // namespace cpu

}  // namespace ft
