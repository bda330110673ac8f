// Routed experts in host memory (src/moe): the expert cache's paths against the resident (fused) experts and the
// float64 transformers references of the MoE fixtures. Prompts run as one prefill step of their first half (the
// streamed path: the layer's experts copied through two buffers) and single-token steps for the rest (the slot
// path: LRU lookup, fill, expert kernels on the slots), with a cache smaller than one layer's experts.
//  offload: logits bitwise equal to fused (same kernels; only where the weights sit differs).
//  cpu, hybrid, offload with 3-expert streaming chunks, f32: relative L2 per position within the fused bounds of
//  test_model_logits (1e-5; the Gated DeltaNet bounds for Qwen3.5).
//  cpu, hybrid in bf16 (GPU): median error and top-1 agreement no worse than transformers' own bf16 run.
// Every case runs on the cpu backend (both sides of the cache in host memory) and, when a GPU is present, on cuda.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>

#include "engine/model_session.h"
#include "engine/sequence_runner.h"
#include "fixture_reference.h"
#include "io/safetensors_archive.h"

namespace ft {
namespace {

constexpr double kGdnShort = 1.1e-5, kGdnAltShort = 6.2e-5;  // as test_model_logits.cpp
constexpr double kGdnAltShortCuda = 1.0e-4;                    // as test_model_logits_cuda.cpp

struct Setup {
  const char* model;
  const char* device;
  DType act = DType::kF32;
  MoeBackend backend = MoeBackend::kFused;
  int64_t stream_chunk = 16;  // experts per streaming buffer
};

// A session of `s` with a cache of n_expert_used slots (fewer than one layer's experts).
Result<ModelSession> open(const Setup& s) {
  SessionOptions o;
  o.model_dir = std::string(FT_TEST_DATA) + "/" + s.model;
  o.device = s.device;
  o.act_dtype = s.act;
  o.max_tokens = 512;
  o.context = 512;
  o.show_progress = false;
  o.moe.backend = s.backend;
  o.moe.cpu_threads = 2;
  FT_ASSIGN_OR_RETURN(ModelSession session, ModelSession::load(o));
  FT_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(*session.backend, session.model->kv_layers(), o.act_dtype,
                                                  session.model->options().max_pages_per_seq, o.page_size,
                                                  session.model->state_layers(), 1));
  session.kv = std::make_unique<KvCache>(std::move(kv));
  if (session.model->expert_store()) {
    ExpertCacheOptions eo = session.expert_options;
    eo.stream_chunk_experts = s.stream_chunk;
    FT_ASSIGN_OR_RETURN(session.experts,
                        attach_expert_cache(*session.backend, *session.model, eo, session.model->config().n_expert_used));
  }
  return session;
}

bool available(const char* device) { return create_backend(device).ok(); }

// Logits of every position: the first half as one prefill step, the rest one token per step.
std::vector<float> run(ModelSession& s, const std::vector<int32_t>& ids) {
  SequenceRunner runner(*s.model, *s.backend, *s.kv);
  std::vector<float> all, last;
  const size_t half = ids.size() / 2;
  EXPECT_TRUE(runner.feed(std::span<const int32_t>(ids).first(half), 0, &all, last).ok());
  EXPECT_TRUE(runner.feed(std::span<const int32_t>(ids).subspan(half), 1, &all, last).ok());
  if (s.experts) {
    EXPECT_TRUE(s.experts->cpu_status().ok()) << s.experts->cpu_status().to_string();
  }
  return all;
}

std::vector<test::ReferencePrompt> prompts_of(const ModelSession& s, const char* model, const char* file) {
  return test::read_reference(std::string(FT_TEST_DATA) + "/" + model + "/" + file, s.model->config().vocab_size);
}

// --- offload == fused, bit for bit -------------------------------------------------------------------------

struct BitwiseCase {
  const char* model;
  const char* device;
  DType act;
};

class OffloadBitwise : public testing::TestWithParam<BitwiseCase> {};

TEST_P(OffloadBitwise, EqualsFused) {
  const BitwiseCase& c = GetParam();
  if (!available(c.device)) GTEST_SKIP() << "no " << c.device << " device";
  auto fused = open({c.model, c.device, c.act, MoeBackend::kFused});
  auto offload = open({c.model, c.device, c.act, MoeBackend::kOffload});
  ASSERT_TRUE(fused.ok()) << fused.status().to_string();
  ASSERT_TRUE(offload.ok()) << offload.status().to_string();
  ASSERT_LT(offload->experts->n_slots(), offload->model->config().n_expert);
  for (const char* file : {"reference.safetensors", "reference_long.safetensors"})
    for (const auto& p : prompts_of(*fused, c.model, file)) {
      const auto a = run(*fused, p.input_ids), b = run(*offload, p.input_ids);
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << file;
    }
  auto stats = offload->experts->stats();
  ASSERT_TRUE(stats.ok());
  int64_t fetched = 0;
  for (const auto& l : *stats) fetched += l.fetched;
  EXPECT_GT(fetched, 0);  // the small cache missed and fetched
}

std::string bitwise_name(const testing::TestParamInfo<BitwiseCase>& info) {
  std::string n = std::string(info.param.model) + "_" + info.param.device + "_" + dtype_name(info.param.act);
  std::replace(n.begin(), n.end(), '/', '_');
  return n;
}

// Not DeepSeek-V3: with every expert resident its shared experts ride with the routed ones (MoeBlock::n_folded), in
// a host expert store they stay a dense MLP, so the sums differ in order; OffloadF32 holds its offload to the reference.
INSTANTIATE_TEST_SUITE_P(Fixtures, OffloadBitwise,
                         testing::Values(BitwiseCase{"models/qwen3_moe", "cpu", DType::kF32},
                                         BitwiseCase{"models/qwen3_5_moe", "cpu", DType::kF32},
                                         BitwiseCase{"models_alt/qwen3_moe", "cpu", DType::kF32},
                                         BitwiseCase{"models/qwen3_moe", "cuda", DType::kF32},
                                         BitwiseCase{"models/qwen3_moe", "cuda", DType::kBF16},
                                         BitwiseCase{"models/qwen3_5_moe", "cuda", DType::kBF16},
                                         BitwiseCase{"models_alt/qwen3_moe", "cuda", DType::kBF16},
                                         BitwiseCase{"models_alt/qwen3_5_moe", "cuda", DType::kBF16},
                                         BitwiseCase{"models_mxfp4/gpt_oss", "cpu", DType::kF32},
                                         BitwiseCase{"models_mxfp4/gpt_oss", "cuda", DType::kF32},
                                         BitwiseCase{"models_mxfp4/gpt_oss", "cuda", DType::kBF16}),
                         bitwise_name);

// MXFP4 experts stay MXFP4 in the host store: each record holds the checkpoint's bytes of the expert (codes with gate
// and up rows alternating, then scales) and its biases, so a record is about a quarter of a bf16 one.
TEST(OffloadMxfp4, RecordsHoldTheStoredExperts) {
  const std::string dir = std::string(FT_TEST_DATA) + "/models_mxfp4/gpt_oss";
  auto s = open({"models_mxfp4/gpt_oss", "cpu", DType::kF32, MoeBackend::kOffload});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const ExpertStore* store = s->model->expert_store();
  ASSERT_NE(store, nullptr);
  const ExpertShape& sh = store->shape();
  ASSERT_EQ(sh.dtype, DType::kF4E2M1);
  ASSERT_TRUE(sh.biases);
  // gpt-oss's fixture: d 64, inter 32; codes 3 d inter / 2 bytes, scales 3 d inter / 32, bf16 biases 2 inter + d.
  ASSERT_EQ(sh.d, 64);
  ASSERT_EQ(sh.inter, 32);
  EXPECT_EQ(store->record_bytes(), size_t{3584});  // 3072 + 192 + 256 bytes, in records of 256; bf16's: 12544
  auto archive = SafetensorsArchive::open_dir(dir);
  ASSERT_TRUE(archive.ok()) << archive.status().to_string();
  const size_t offsets[] = {0, 2048, 3072, 3200, 3264, 3392};  // gate_up, down, their scales, their biases
  const char* parts[] = {"gate_up_proj_blocks", "down_proj_blocks",  "gate_up_proj_scales",
                         "down_proj_scales",    "gate_up_proj_bias", "down_proj_bias"};
  for (int64_t layer = 0; layer < sh.n_layers; ++layer)
    for (int64_t e = 0; e < sh.n_expert; ++e)
      for (int i = 0; i < 6; ++i) {
        const std::string name = "model.layers." + std::to_string(layer) + ".mlp.experts." + parts[i];
        auto stored = archive->tensor(name);
        ASSERT_TRUE(stored.ok()) << name;
        const size_t bytes = stored->nbytes() / static_cast<size_t>(sh.n_expert);
        const auto* want = static_cast<const unsigned char*>(stored->data()) + static_cast<size_t>(e) * bytes;
        const auto* got = static_cast<const unsigned char*>(store->record(layer, e)) + offsets[i];
        EXPECT_EQ(std::memcmp(got, want, bytes), 0) << name << " expert " << e;
      }
}

// --- cpu / hybrid / chunked streaming against the float64 reference (f32) ----------------------------------

struct F32Case {
  Setup setup;
  double bound;
};

class OffloadF32 : public testing::TestWithParam<F32Case> {};

TEST_P(OffloadF32, MatchesReference) {
  const F32Case& c = GetParam();
  if (!available(c.setup.device)) GTEST_SKIP() << "no " << c.setup.device << " device";
  auto s = open(c.setup);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const int64_t vocab = s->model->config().vocab_size;
  double worst = 0;
  for (const auto& p : prompts_of(*s, c.setup.model, "reference.safetensors")) {
    const auto got = run(*s, p.input_ids);
    for (size_t i = 0; i < p.input_ids.size(); ++i)
      worst = std::max(worst, test::relative_l2(&got[i * vocab], &p.logits[i * vocab], vocab));
  }
  std::printf("%s %s %s (stream chunk %lld): worst relative L2 %.3g\n", c.setup.model, c.setup.device,
              moe_backend_name(c.setup.backend), static_cast<long long>(c.setup.stream_chunk), worst);
  EXPECT_LE(worst, c.bound);
}

std::string f32_name(const testing::TestParamInfo<F32Case>& info) {
  const Setup& s = info.param.setup;
  std::string n = std::string(s.model) + "_" + s.device + "_" + moe_backend_name(s.backend) + "_chunk" +
                  std::to_string(s.stream_chunk);
  std::replace(n.begin(), n.end(), '/', '_');
  return n;
}

std::vector<F32Case> f32_cases() {
  std::vector<F32Case> out;
  for (const char* device : {"cpu", "cuda"})
    for (auto [model, bound] :
         {std::pair{"models/qwen3_moe", 1e-5}, std::pair{"models_alt/qwen3_moe", 1e-5},
          std::pair{"models/qwen3_5_moe", kGdnShort}, std::pair{"models/deepseek_v3", 1e-5},
          std::pair{"models/gpt_oss", 1e-5}, std::pair{"models_mxfp4/gpt_oss", 1e-5},
          std::pair{"models_alt/qwen3_5_moe", std::string(device) == "cuda" ? kGdnAltShortCuda : kGdnAltShort}}) {
      out.push_back({{model, device, DType::kF32, MoeBackend::kCpu}, bound});
      out.push_back({{model, device, DType::kF32, MoeBackend::kHybrid}, bound});
      out.push_back({{model, device, DType::kF32, MoeBackend::kOffload, 3}, bound});
    }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OffloadF32, testing::ValuesIn(f32_cases()), f32_name);

// --- cpu / hybrid in bf16 on the GPU against transformers' own bf16 run ------------------------------------

struct Bf16Case {
  const char* model;
  MoeBackend backend;
  double median;  // transformers' bf16 median per-position relative L2 on reference.safetensors
  int top1;       // ... and its top-1 agreement with the float64 reference (of 60 positions)
};

class OffloadBf16 : public testing::TestWithParam<Bf16Case> {};

TEST_P(OffloadBf16, NoWorseThanTransformersBf16) {
  const Bf16Case& c = GetParam();
  if (!available("cuda")) GTEST_SKIP() << "no cuda device";
  auto s = open({c.model, "cuda", DType::kBF16, c.backend});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const int64_t vocab = s->model->config().vocab_size;
  std::vector<double> errors;
  int top1 = 0;
  for (const auto& p : prompts_of(*s, c.model, "reference.safetensors")) {
    const auto got = run(*s, p.input_ids);
    for (size_t i = 0; i < p.input_ids.size(); ++i) {
      const float* g = &got[i * vocab];
      const float* w = &p.logits[i * vocab];
      errors.push_back(test::relative_l2(g, w, vocab));
      top1 += std::max_element(g, g + vocab) - g == std::max_element(w, w + vocab) - w;
    }
  }
  std::sort(errors.begin(), errors.end());
  const double median = errors[errors.size() / 2];
  std::printf("cuda bf16 %s %s: median relative L2 %.3g (transformers %.3g), top-1 %d/%zu (transformers %d)\n", c.model,
              moe_backend_name(c.backend), median, c.median, top1, errors.size(), c.top1);
  EXPECT_LE(median, c.median);
  EXPECT_GE(top1, c.top1);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, OffloadBf16,
    testing::Values(Bf16Case{"models/qwen3_moe", MoeBackend::kCpu, 1.2e-2, 57},
                    Bf16Case{"models/qwen3_moe", MoeBackend::kHybrid, 1.2e-2, 57},
                    Bf16Case{"models/qwen3_5_moe", MoeBackend::kCpu, 3.8e-2, 56},
                    Bf16Case{"models/qwen3_5_moe", MoeBackend::kHybrid, 3.8e-2, 56}),
    [](const testing::TestParamInfo<Bf16Case>& param_info) {
      std::string n = std::string(param_info.param.model) + "_" + moe_backend_name(param_info.param.backend);
      std::replace(n.begin(), n.end(), '/', '_');
      return n;
    });

}  // namespace
}  // namespace ft
