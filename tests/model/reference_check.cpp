// check_reference_file: per-position relative L2, then greedy ids, for each prompt of a reference file.
#include "reference_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <span>
#include <vector>

#include "engine/sequence_runner.h"
#include "fixture_reference.h"

namespace ft::test {

namespace {
constexpr double kGreedyMargin = 1e-2;
}  // namespace

void check_reference_file(ModelSession& s, const std::string& model, const std::string& file, int32_t chunk,
                          double max_rel_l2, const std::string& label) {
  const int64_t vocab = s.model->config().vocab_size;
  auto prompts = read_reference(std::string(FT_TEST_DATA) + "/" + model + "/" + file, vocab);
  ASSERT_FALSE(prompts.empty());
  for (size_t p = 0; p < prompts.size(); ++p) {
    const auto& ref = prompts[p];
    SequenceRunner runner(*s.model, *s.backend, *s.kv);
    std::vector<float> all, last;
    ASSERT_TRUE(runner.feed(ref.input_ids, chunk, &all, last).ok());
    const int64_t t = static_cast<int64_t>(ref.input_ids.size());
    ASSERT_EQ(static_cast<int64_t>(all.size()), t * vocab);
    int failures = 0;
    double worst = 0;
    for (int64_t i = 0; i < t; ++i) {
      const double err = relative_l2(&all[i * vocab], &ref.logits[i * vocab], vocab);
      worst = std::max(worst, err);
      if (err > max_rel_l2 && failures++ < 10)
        ADD_FAILURE() << file << " prompt " << p << " position " << i << ": relative L2 " << err;
    }
    std::printf("%s %s %s prompt %zu (%lld tokens): worst relative L2 %.3g\n", label.c_str(), model.c_str(),
                file.c_str(), p, static_cast<long long>(t), worst);
    // Greedy ids up to the first step whose top-2 margin is under kGreedyMargin (the reference's at the first
    // step; ours, which matches it to the bound, after that).
    for (size_t step = 0; step < ref.greedy_ids.size(); ++step) {
      const float* margin_row = step == 0 ? &ref.logits[ref.logits.size() - vocab] : last.data();
      if (top2_margin(margin_row, vocab) < kGreedyMargin) break;
      const int32_t next = static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
      ASSERT_EQ(next, ref.greedy_ids[step]) << "greedy step " << step;
      ASSERT_TRUE(runner.feed(std::span<const int32_t>(&next, 1), 1, nullptr, last).ok());
    }
  }
}

}  // namespace ft::test
