// SafetensorsWriter: its bytes checked by a hand parse of the format, and read back through SafetensorsFile.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "io_test_util.h"

namespace ft {
namespace {

using test::expect_error;
using test::read_file;
using test::TempDir;

uint64_t hand_le64(const std::string& bytes) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  return v;
}

TEST(SafetensorsWriter, LayoutMatchesTheFormatByHand) {
  TempDir dir;
  const std::string path = dir.file("out.safetensors");
  SafetensorsWriter w(path);
  ASSERT_TRUE(w.add("b", DType::kU8, {3}).ok());
  ASSERT_TRUE(w.add("a", DType::kBF16, {2}).ok());
  w.set_metadata("format", "pt");
  ASSERT_TRUE(w.begin().ok());
  ASSERT_TRUE(w.write_tensor("b", "xyz", 3).ok());
  ASSERT_TRUE(w.write_tensor("a", "1234", 4).ok());
  ASSERT_TRUE(w.finish().ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  const std::string bytes = read_file(path);
  const uint64_t n = hand_le64(bytes);
  ASSERT_EQ((8 + n) % 8, 0u) << "data section is 8-byte aligned";
  ASSERT_EQ(bytes.size(), 8 + n + 7);
  const std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.front(), '{');
  const size_t close = header.find_last_of('}');
  EXPECT_EQ(header.find_first_not_of(' ', close + 1), std::string::npos) << "padding is spaces";
  // Declaration order sets the data order: b first, then a.
  EXPECT_NE(header.find(R"("a":{"data_offsets":[3,7],"dtype":"BF16","shape":[2]})"), std::string::npos) << header;
  EXPECT_NE(header.find(R"("b":{"data_offsets":[0,3],"dtype":"U8","shape":[3]})"), std::string::npos) << header;
  EXPECT_NE(header.find(R"("__metadata__":{"format":"pt"})"), std::string::npos) << header;
  EXPECT_EQ(bytes.substr(8 + n), "xyz1234");
}

TEST(SafetensorsWriter, RoundTripThroughTheReader) {
  TempDir dir;
  const std::string path = dir.file("rt.safetensors");
  auto f32 = Tensor::host(DType::kF32, {2, 3});
  auto f4 = Tensor::host(DType::kF4E2M1, {5});
  auto scalar = Tensor::host(DType::kI64, {});
  auto empty = Tensor::host(DType::kBF16, {0, 7});
  ASSERT_TRUE(f32.ok() && f4.ok() && scalar.ok() && empty.ok());
  for (int i = 0; i < 6; ++i) f32->ptr<float>()[i] = 0.5f * static_cast<float>(i) - 1.0f;
  std::memcpy(f4->data(), "\x21\x43\x05", 3);
  *scalar->ptr<int64_t>() = -1234567890123;
  ASSERT_TRUE(write_safetensors(path, {{"w.f32", *f32}, {"w.f4", *f4}, {"s", *scalar}, {"e", *empty}},
                                {{"format", "pt"}, {"note", "x"}})
                  .ok());
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  const auto& f = *file.value();
  EXPECT_EQ(f.metadata().size(), 2u);
  EXPECT_EQ(f.metadata().at("note"), "x");
  const TensorInfo* a = f.find("w.f32");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::kF32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(f.tensor_data(*a), f32->data(), 24), 0);
  const TensorInfo* b = f.find("w.f4");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->nbytes, 3u);
  EXPECT_EQ(std::memcmp(f.tensor_data(*b), "\x21\x43\x05", 3), 0);
  const TensorInfo* s = f.find("s");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->shape.empty());
  int64_t v = 0;
  std::memcpy(&v, f.tensor_data(*s), 8);
  EXPECT_EQ(v, -1234567890123);
  EXPECT_EQ(f.find("e")->shape, (std::vector<int64_t>{0, 7}));
}

TEST(SafetensorsWriter, StreamsTheDataSectionInPieces) {
  TempDir dir;
  const std::string path = dir.file("stream.safetensors");
  SafetensorsWriter w(path);
  ASSERT_TRUE(w.add("x", DType::kF32, {1000}).ok());
  ASSERT_TRUE(w.add("y", DType::kU8, {13}).ok());
  ASSERT_TRUE(w.begin().ok());
  std::string expected;
  for (size_t i = 0; i < 4013; ++i) expected.push_back(static_cast<char>(i * 7 + 3));
  for (size_t pos = 0; pos < expected.size(); pos += 97)
    ASSERT_TRUE(w.write_bytes(expected.data() + pos, std::min<size_t>(97, expected.size() - pos)).ok());
  ASSERT_TRUE(w.finish().ok());
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  const auto& f = *file.value();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.data_section()), f.data_section_bytes()), expected);
}

TEST(SafetensorsWriter, MixesWholeTensorsAndPiecesAtBoundaries) {
  TempDir dir;
  const std::string path = dir.file("mix.safetensors");
  SafetensorsWriter w(path);
  ASSERT_TRUE(w.add("a", DType::kU8, {4}).ok());
  ASSERT_TRUE(w.add("empty", DType::kU8, {0}).ok());
  ASSERT_TRUE(w.add("b", DType::kU8, {2}).ok());
  ASSERT_TRUE(w.begin().ok());
  ASSERT_TRUE(w.write_bytes("ab", 2).ok());
  ASSERT_TRUE(w.write_bytes("cd", 2).ok());
  ASSERT_TRUE(w.write_tensor("b", "ef", 2).ok());  // "empty" needs no bytes
  ASSERT_TRUE(w.finish().ok());
  EXPECT_EQ(read_file(path).substr(read_file(path).size() - 6), "abcdef");
}

TEST(SafetensorsWriter, RefusesMisuseAndLeavesNoFile) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  {
    SafetensorsWriter w(path);
    ASSERT_TRUE(w.add("a", DType::kU8, {2}).ok());
    expect_error(w.add("a", DType::kU8, {2}), StatusCode::kInvalidArgument, {path, "tensor 'a'", "declared twice"});
    expect_error(w.add("neg", DType::kU8, {-1}), StatusCode::kInvalidArgument, {path, "tensor 'neg'", "bad shape"});
    expect_error(w.add("__metadata__", DType::kU8, {1}), StatusCode::kInvalidArgument, {path, "reserved name"});
    ASSERT_TRUE(w.add("b", DType::kU8, {2}).ok());
    ASSERT_TRUE(w.begin().ok());
    expect_error(w.add("c", DType::kU8, {1}), StatusCode::kInvalidArgument, {path, "tensor 'c'", "after begin()"});
    expect_error(w.write_tensor("b", "xy", 2), StatusCode::kInvalidArgument,
                 {path, "tensor 'b'", "out of order; expected 'a'"});
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    EXPECT_FALSE(w.finish().ok());
  }
  {
    SafetensorsWriter w(path);
    ASSERT_TRUE(w.add("a", DType::kU8, {2}).ok());
    ASSERT_TRUE(w.begin().ok());
    expect_error(w.write_tensor("a", "xyz", 3), StatusCode::kInvalidArgument, {path, "3 bytes given, 2 declared"});
  }
  {
    SafetensorsWriter w(path);
    ASSERT_TRUE(w.add("a", DType::kU8, {2}).ok());
    ASSERT_TRUE(w.begin().ok());
    expect_error(w.write_bytes("xyz", 3), StatusCode::kInvalidArgument,
                 {path, "past the declared 2-byte data section"});
  }
  {
    SafetensorsWriter w(path);
    ASSERT_TRUE(w.add("a", DType::kU8, {2}).ok());
    ASSERT_TRUE(w.begin().ok());
    ASSERT_TRUE(w.write_bytes("x", 1).ok());
    expect_error(w.finish(), StatusCode::kInvalidArgument, {path, "after 1 of 2 data bytes"});
  }
  {
    SafetensorsWriter w(path);  // abandoned mid-way: the destructor removes the temporary
    ASSERT_TRUE(w.add("a", DType::kU8, {2}).ok());
    ASSERT_TRUE(w.begin().ok());
    EXPECT_TRUE(std::filesystem::exists(path + ".tmp"));
  }
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(SafetensorsWriter, ConvenienceRefusesStridedTensors) {
  TempDir dir;
  auto t = Tensor::host(DType::kF32, {4, 4});
  ASSERT_TRUE(t.ok());
  expect_error(write_safetensors(dir.file("x.safetensors"), {{"v", t->slice(1, 0, 2)}}), StatusCode::kInvalidArgument,
               {"tensor 'v'", "contiguous host tensor"});
}

}  // namespace
}  // namespace ft
