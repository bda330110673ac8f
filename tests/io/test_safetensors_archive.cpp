// SafetensorsArchive on the fixture checkpoints (checked against their raw header text) and on
// single-file and sharded checkpoints made here, well-formed and broken.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "io/safetensors_archive.h"
#include "io/safetensors_writer.h"
#include "io_test_util.h"

namespace ft {
namespace {

using test::expect_error;
using test::read_file;
using test::safetensors_bytes;
using test::TempDir;
using test::write_file;

const std::string kModels = std::string(FT_TEST_DATA) + "/models";

// A U8 tensor of n bytes whose byte i is (i * 31 + seed) mod 256.
std::pair<std::string, Tensor> pattern_tensor(const std::string& name, std::initializer_list<int64_t> shape, int seed) {
  auto t = Tensor::host(DType::kU8, shape);
  EXPECT_TRUE(t.ok());
  for (int64_t i = 0; i < t->numel(); ++i) t->ptr<uint8_t>()[i] = static_cast<uint8_t>(i * 31 + seed);
  return {name, t.value()};
}

// The fixture's entry for one tensor, rebuilt as text in the compact form its writer uses.
std::string entry_text(const TensorInfo& t) {
  std::string s = "\"";
  s += t.name;
  s += "\":{\"dtype\":\"";
  s += dtype_to_safetensors(t.dtype);
  s += "\",\"shape\":[";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(t.shape[i]);
  }
  s += "],\"data_offsets\":[";
  s += std::to_string(t.offset);
  s += ",";
  s += std::to_string(t.offset + t.nbytes);
  s += "]}";
  return s;
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

TEST(SafetensorsArchive, FixtureCheckpointsMatchTheirRawHeaders) {
  for (const char* model : {"qwen3_dense", "qwen3_moe", "qwen3_5_moe", "deepseek_v3", "gpt_oss"}) {
    SCOPED_TRACE(model);
    const std::string dir = kModels + "/" + model;
    auto archive = SafetensorsArchive::open_dir(dir);
    ASSERT_TRUE(archive.ok()) << archive.status().to_string();
    const std::string raw = read_file(dir + "/model.safetensors");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(raw[static_cast<size_t>(i)]);
    const std::string header = raw.substr(8, n);
    // Every tensor's entry appears verbatim, the header has no others, and they fill the data section.
    const std::vector<std::string> names = archive->names();
    EXPECT_EQ(names.size(), count_of(header, "\"data_offsets\""));
    for (const std::string& name : names)
      EXPECT_NE(header.find(entry_text(*archive->find(name))), std::string::npos) << name;
    EXPECT_EQ(archive->total_bytes(), raw.size() - 8 - n);
  }
}

TEST(SafetensorsArchive, Qwen3DenseKnownTensors) {
  auto archive = SafetensorsArchive::open_dir(kModels + "/qwen3_dense");
  ASSERT_TRUE(archive.ok()) << archive.status().to_string();
  EXPECT_EQ(archive->names().size(), 3u * 11 + 3);
  const SafetensorsFile* file = nullptr;
  const TensorInfo* embed = archive->find("model.embed_tokens.weight", &file);
  ASSERT_NE(embed, nullptr);
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_EQ(embed->dtype, DType::kBF16);
  EXPECT_EQ(embed->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(embed->offset, 65536u);
  auto t = archive->tensor("model.embed_tokens.weight");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->shape_string(), "[512, 64] bf16");
  // The first element's bytes, read with python's struct at 8 + 3712 + 65536: 65 bc.
  EXPECT_EQ(t->ptr<uint8_t>()[0], 0x65);
  EXPECT_EQ(t->ptr<uint8_t>()[1], 0xbc);
  auto norm = archive->tensor("model.norm.weight");
  ASSERT_TRUE(norm.ok());
  EXPECT_EQ(norm->shape_string(), "[64] bf16");
}

TEST(SafetensorsArchive, SingleFileTensorsAreZeroCopyAndOutliveTheArchive) {
  TempDir dir;
  ASSERT_TRUE(
      write_safetensors(dir.file("model.safetensors"), {pattern_tensor("a", {3, 5}, 1), pattern_tensor("b", {7}, 2)})
          .ok());
  Tensor a;
  {
    auto archive = SafetensorsArchive::open_dir(dir.path());
    ASSERT_TRUE(archive.ok()) << archive.status().to_string();
    EXPECT_EQ(archive->names(), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(archive->total_bytes(), 22u);
    auto ra = archive->tensor("a");
    ASSERT_TRUE(ra.ok());
    a = ra.value();
    const SafetensorsFile* file = nullptr;
    const TensorInfo* info = archive->find("a", &file);
    EXPECT_EQ(a.data(), static_cast<const void*>(file->tensor_data(*info)));
  }
  EXPECT_EQ(a.shape_string(), "[3, 5] u8");
  EXPECT_TRUE(a.is_contiguous());
  for (int i = 0; i < 15; ++i) EXPECT_EQ(a.ptr<uint8_t>()[i], static_cast<uint8_t>(i * 31 + 1));
}

TEST(SafetensorsArchive, ShardedCheckpoint) {
  TempDir dir;
  ASSERT_TRUE(write_safetensors(dir.file("model-00001-of-00002.safetensors"),
                                {pattern_tensor("x.0", {4}, 1), pattern_tensor("x.1", {2, 2}, 2)})
                  .ok());
  // Over 4 MiB so that read_into splits it across the pool.
  ASSERT_TRUE(
      write_safetensors(dir.file("model-00002-of-00002.safetensors"), {pattern_tensor("y", {(5 << 20) + 3}, 3)}).ok());
  write_file(dir.file("model.safetensors.index.json"),
             R"({"metadata":{"total_size":5242895},"weight_map":{"x.0":"model-00001-of-00002.safetensors",)"
             R"("x.1":"model-00001-of-00002.safetensors","y":"model-00002-of-00002.safetensors"}})");
  auto archive = SafetensorsArchive::open_dir(dir.path());
  ASSERT_TRUE(archive.ok()) << archive.status().to_string();
  EXPECT_EQ(archive->files().size(), 2u);
  EXPECT_EQ(archive->names(), (std::vector<std::string>{"x.0", "x.1", "y"}));
  EXPECT_EQ(archive->total_bytes(), 8u + (5u << 20) + 3);
  const SafetensorsFile* file = nullptr;
  ASSERT_NE(archive->find("y", &file), nullptr);
  EXPECT_NE(file->path().find("model-00002-of-00002.safetensors"), std::string::npos);
  auto x1 = archive->tensor("x.1");
  ASSERT_TRUE(x1.ok());
  EXPECT_EQ(x1->shape_string(), "[2, 2] u8");
  EXPECT_EQ(x1->ptr<uint8_t>()[3], static_cast<uint8_t>(3 * 31 + 2));

  ThreadPool pool(3);
  std::vector<uint8_t> y((5 << 20) + 3);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    std::fill(y.begin(), y.end(), 0);
    ASSERT_TRUE(archive->read_into("y", y.data(), y.size(), p).ok());
    size_t bad = 0;
    for (size_t i = 0; i < y.size(); ++i) bad += y[i] != static_cast<uint8_t>(i * 31 + 3);
    EXPECT_EQ(bad, 0u);
  }
  expect_error(archive->read_into("y", y.data(), 10), StatusCode::kInvalidArgument,
               {"model-00002-of-00002.safetensors", "tensor 'y'", "destination holds 10 bytes"});
  expect_error(archive->read_into("nope", y.data(), 10), StatusCode::kNotFound, {"tensor 'nope'"});
}

TEST(SafetensorsArchive, MissingTensorIsNotFound) {
  TempDir dir;
  ASSERT_TRUE(write_safetensors(dir.file("model.safetensors"), {pattern_tensor("a", {1}, 0)}).ok());
  auto archive = SafetensorsArchive::open_dir(dir.path());
  ASSERT_TRUE(archive.ok());
  EXPECT_FALSE(archive->contains("x"));
  EXPECT_EQ(archive->find("x"), nullptr);
  expect_error(archive->tensor("x").status(), StatusCode::kNotFound,
               {dir.path() + ": tensor 'x' not found in the checkpoint"});
}

TEST(SafetensorsArchive, TensorViewsStopAtFourDims) {
  TempDir dir;
  SafetensorsWriter w(dir.file("model.safetensors"));
  ASSERT_TRUE(w.add("five", DType::kU8, {1, 1, 1, 1, 2}).ok());
  ASSERT_TRUE(w.begin().ok());
  ASSERT_TRUE(w.write_tensor("five", "ab", 2).ok());
  ASSERT_TRUE(w.finish().ok());
  auto archive = SafetensorsArchive::open_dir(dir.path());
  ASSERT_TRUE(archive.ok());
  ASSERT_NE(archive->find("five"), nullptr);
  expect_error(archive->tensor("five").status(), StatusCode::kUnsupported, {"tensor 'five'", "5 dims, at most 4"});
}

TEST(SafetensorsArchive, DirectoryWithoutCheckpoint) {
  TempDir dir;
  expect_error(SafetensorsArchive::open_dir(dir.path()).status(), StatusCode::kNotFound,
               {dir.path() + ": no model.safetensors or model.safetensors.index.json"});
  expect_error(SafetensorsArchive::open_dir(dir.file("nothing")).status(), StatusCode::kNotFound,
               {"nothing: no such directory"});
}

TEST(SafetensorsArchive, BrokenSingleFileNamesTheFile) {
  TempDir dir;
  write_file(dir.file("model.safetensors"),
             safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "abcd"));
  expect_error(SafetensorsArchive::open_dir(dir.path()).status(), StatusCode::kCorruptFile,
               {dir.file("model.safetensors"), "tensor 'w'", "exceed the 4-byte data section"});
}

class BrokenIndex : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(write_safetensors(dir_.file("s1.safetensors"), {pattern_tensor("a", {2}, 0)}).ok());
    ASSERT_TRUE(write_safetensors(dir_.file("s2.safetensors"), {pattern_tensor("b", {2}, 0)}).ok());
  }
  Status open_with_index(const std::string& json) {
    write_file(index_, json);
    return SafetensorsArchive::open_dir(dir_.path()).status();
  }
  TempDir dir_;
  std::string index_ = dir_.file("model.safetensors.index.json");
};

TEST_F(BrokenIndex, WellFormedIndexOpens) {
  ASSERT_TRUE(open_with_index(R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})").ok());
}

TEST_F(BrokenIndex, ShardMissing) {
  expect_error(open_with_index(R"({"weight_map":{"a":"s1.safetensors","b":"s9.safetensors"}})"), StatusCode::kNotFound,
               {index_, "shard 's9.safetensors' of tensor 'b' does not exist"});
}

TEST_F(BrokenIndex, TensorNotInItsShard) {
  expect_error(open_with_index(R"({"weight_map":{"a":"s1.safetensors","b":"s1.safetensors"}})"),
               StatusCode::kCorruptFile,
               {index_, "tensor 'b' is mapped to 's1.safetensors' but that shard does not hold it"});
}

TEST_F(BrokenIndex, TensorInTwoShards) {
  ASSERT_TRUE(
      write_safetensors(dir_.file("s3.safetensors"), {pattern_tensor("a", {2}, 0), pattern_tensor("c", {2}, 0)}).ok());
  expect_error(open_with_index(R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors","c":"s3.safetensors"}})"),
               StatusCode::kCorruptFile, {"tensor 'a' is in both", "s1.safetensors", "s3.safetensors"});
}

TEST_F(BrokenIndex, MalformedJson) {
  expect_error(open_with_index("{\"weight_map\":"), StatusCode::kCorruptFile, {index_, "not valid JSON"});
  expect_error(open_with_index("[]"), StatusCode::kCorruptFile, {index_, "expected a JSON object"});
  expect_error(open_with_index("{}"), StatusCode::kCorruptFile, {index_, "missing 'weight_map'"});
  expect_error(open_with_index(R"({"weight_map":[]})"), StatusCode::kCorruptFile,
               {index_, "'weight_map' is an array, expected an object"});
  expect_error(open_with_index(R"({"weight_map":{}})"), StatusCode::kCorruptFile, {index_, "'weight_map' is empty"});
  expect_error(open_with_index(R"({"weight_map":{"a":1}})"), StatusCode::kCorruptFile,
               {index_, "tensor 'a': shard is a number"});
}

TEST_F(BrokenIndex, ShardOutsideTheDirectory) {
  for (const char* shard : {"../s1.safetensors", "/etc/passwd", "sub/../../s1.safetensors", ""})
    expect_error(open_with_index(std::string(R"({"weight_map":{"a":")") + shard + "\"}}"), StatusCode::kCorruptFile,
                 {index_, "tensor 'a'", "is not a file inside the checkpoint directory"});
}

TEST_F(BrokenIndex, BrokenShardNamesTheShard) {
  write_file(dir_.file("s2.safetensors"), "short");
  expect_error(open_with_index(R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})"),
               StatusCode::kCorruptFile, {"s2.safetensors", "too short"});
}

}  // namespace
}  // namespace ft
