// cuda sample against the ref op (sample_cases.h: ids equal but for draws on a float boundary, logprobs 1e-4);
// skipped without a GPU.
#include "sample_cases.h"
#include "test_ops_cuda_env.h"

namespace ft::test {
namespace {

TEST(OpsCuda, Sample) {
  CudaEnv env;
  FT_REQUIRE_GPU(env);
  uint64_t seed = 1;
  for (const SampleCase& c : sample_cases()) {
    Tensor logits = make_tensor(DType::kF32, {c.n, c.vocab}), params = make_tensor(DType::kF32, {c.n, 5});
    fill_sample_inputs(c, logits, params, seed++);
    const Tensor ids = env.empty(DType::kI32, {c.n}), lp = env.empty(DType::kF32, {c.n, 1 + c.n_top});
    const Tensor top = c.n_top ? env.empty(DType::kI32, {c.n, c.n_top}) : Tensor{};
    ASSERT_TRUE(env.ops().sample(env.up(logits), env.up(params), ids, lp, top, env.stream()).ok());
    check_sample(c, logits, params, env.down(ids), env.down(lp), c.n_top ? env.down(top) : Tensor{},
                 "cuda " + sample_case_name(c));
  }
}

}  // namespace
}  // namespace ft::test
