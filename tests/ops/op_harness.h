// The op harness: random tensors with fixed seeds, NMSE against the ref op, the first ten mismatches on
// failure, and the list of CPU instruction-set levels to run every case at.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/ref/ref_ops.h"
#include "core/thread_pool.h"

namespace ft::test {

// A contiguous zero-filled host tensor (aborts on allocation failure).
Tensor make_tensor(DType dtype, std::initializer_list<int64_t> shape);
// Normal(0, scale) values rounded to the tensor's dtype, from a fixed seed.
void fill_normal(const Tensor& t, uint64_t seed, double scale = 1.0);
// Copies values (as double) from src into dst of any float dtype, same shape, both contiguous.
void copy_values(const Tensor& src, const Tensor& dst);
// Sets element i of a contiguous tensor.
void set_value(const Tensor& t, int64_t i, double v);

// Normalised mean squared error sum((got - want)^2) / sum(want^2) over every element (want == 0 everywhere:
// the plain sum of squares). Both tensors have the same shape; any strides.
double nmse(const Tensor& got, const Tensor& want);
// Adds a gtest failure naming `what` when nmse(got, want) > tol, listing the first ten elements whose error
// exceeds sqrt(tol) * rms(want) as (index, got, want).
void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what);
// Exact equality of two integer tensors, with the first ten differences on failure.
void expect_equal_ints(const Tensor& got, const Tensor& want, const std::string& what);

// Every CPU ISA level this machine runs, lowest first.
std::vector<cpu::IsaLevel> isa_levels();

// Streams for both backends: the cpu ops on a two-thread pool (so the split paths run), ref inline.
struct OpEnv {
  ThreadPool pool{2};
  HostStream cpu_stream{&pool};
  HostStream ref_stream{nullptr};
  const OpTable& cpu = cpu_op_table();
  const OpTable& ref = ref_op_table();
};

// Runs body once per ISA level with that level forced (restoring the detected level afterwards).
template <class F>
void for_each_isa(F&& body) {
  for (cpu::IsaLevel level : isa_levels()) {
    if (!cpu::set_isa_level(level).ok()) continue;
    body(std::string(" [isa ") + cpu::isa_level_name(level) + "]");
  }
  (void)cpu::set_isa_level(cpu::detected_isa_level());
}

}  // namespace ft::test
