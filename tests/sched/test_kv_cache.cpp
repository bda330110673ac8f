// KvCache on the cpu backend: a layer whose values are its keys' leading dims (multi-head latent attention's latent
// cache) allocates keys only, reads its values through a view of them, and copies a page with its keys; a layer with
// its own values keeps a tensor of them and copies it.
#include <gtest/gtest.h>

#include <vector>

#include "kv/kv_cache.h"

namespace ft {
namespace {

float& at(const Tensor& t, int64_t page, int64_t row, int64_t dim) {
  return t.ptr<float>()[page * t.stride[0] + row * t.stride[1] + dim * t.stride[3]];
}

TEST(KvCache, ValuesInKeysAreAViewCopiedWithTheKeys) {
  auto backend = create_backend("cpu");
  ASSERT_TRUE(backend.ok());
  const std::vector<KvLayerShape> layers = {{1, 9, 8, true}, {2, 4, 3}};
  const int32_t page_size = 4, n_pages = 3;
  // Layer 0: one head of 9 key dims; layer 1: two heads of 4 key and 3 value dims.
  EXPECT_EQ(KvCache::page_bytes(layers, DType::kF32, page_size), sizeof(float) * page_size * (9 + 2 * (4 + 3)));
  auto cache = KvCache::create(**backend, layers, DType::kF32, n_pages, page_size);
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  const Tensor k0 = cache->k(0), v0 = cache->v(0), k1 = cache->k(1), v1 = cache->v(1);
  ASSERT_EQ(v0.shape_string(), "[3, 4, 1, 8] f32");
  EXPECT_EQ(v0.data(), k0.data());
  EXPECT_NE(v1.buffer, k1.buffer);
  for (int64_t r = 0; r < page_size; ++r)
    for (int64_t d = 0; d < 9; ++d) at(k0, 0, r, d) = static_cast<float>(10 * r + d);
  EXPECT_EQ(at(v0, 0, 2, 7), 27.0f) << "the values read the keys' leading dims";
  at(v1, 0, 1, 2) = 5.0f;
  ASSERT_TRUE(cache->copy_page(**backend, 0, 2).ok());
  for (int64_t r = 0; r < page_size; ++r)
    for (int64_t d = 0; d < 9; ++d) EXPECT_EQ(at(k0, 2, r, d), static_cast<float>(10 * r + d)) << r << " " << d;
  EXPECT_EQ(at(v1, 2, 1, 2), 5.0f) << "a layer's own values are copied too";
}

TEST(KvCache, ValuesInKeysMustFitTheKeys) {
  auto backend = create_backend("cpu");
  ASSERT_TRUE(backend.ok());
  EXPECT_FALSE(KvCache::create(**backend, {{1, 8, 9, true}}, DType::kF32, 2, 4).ok());
}

}  // namespace
}  // namespace ft
