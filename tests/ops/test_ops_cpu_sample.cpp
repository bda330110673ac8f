// cpu sample against the ref op (sample_cases.h: ids equal but for draws on a float boundary, logprobs 1e-4).
#include "sample_cases.h"

namespace ft::test {
namespace {

TEST(OpsCpu, Sample) {
  OpEnv env;
  uint64_t seed = 1;
  for (const SampleCase& c : sample_cases()) {
    Tensor logits = make_tensor(DType::kF32, {c.n, c.vocab}), params = make_tensor(DType::kF32, {c.n, 5});
    fill_sample_inputs(c, logits, params, seed++);
    Tensor ids = make_tensor(DType::kI32, {c.n}), lp = make_tensor(DType::kF32, {c.n, 1 + c.n_top});
    Tensor top = c.n_top ? make_tensor(DType::kI32, {c.n, c.n_top}) : Tensor{};
    ASSERT_TRUE(env.cpu.sample(logits, params, ids, lp, top, env.cpu_stream).ok());
    check_sample(c, logits, params, ids, lp, top, "cpu " + sample_case_name(c));
  }
}

}  // namespace
}  // namespace ft::test
