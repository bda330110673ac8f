// SafetensorsFile against hand-built files: valid ones read as written, every malformed one refused in one line.
#include <gtest/gtest.h>

#include <string>

#include "io/safetensors.h"
#include "io_test_util.h"

namespace ft {
namespace {

using test::expect_error;
using test::safetensors_bytes;
using test::TempDir;
using test::write_file;

class SafetensorsReader : public ::testing::Test {
 protected:
  // Writes `header` + `data` as bad.safetensors and opens it.
  Status open_bytes(const std::string& header, const std::string& data) {
    write_file(path_, safetensors_bytes(header, data));
    return SafetensorsFile::open(path_).status();
  }
  // Expects open_bytes to fail with `code`, naming the file, tensor 'w' and `phrase`.
  void expect_tensor_error(const std::string& header, const std::string& data, StatusCode code,
                           const std::string& phrase) {
    expect_error(open_bytes(header, data), code, {path_, "tensor 'w'", phrase});
  }
  TempDir dir_;
  std::string path_ = dir_.file("bad.safetensors");
};

TEST_F(SafetensorsReader, ReadsHandBuiltFileAsWritten) {
  // Tensors in header order a, s, f, e; data: a = 6 f32 (24 bytes), s = bf16 scalar (2), f = 5 fp4 (3), e = empty.
  const std::string header = R"({"__metadata__":{"format":"pt","k":"v"},)"
                             R"("z.a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                             R"("s":{"dtype":"BF16","shape":[],"data_offsets":[24,26]},)"
                             R"("f":{"dtype":"F4","shape":[5],"data_offsets":[26,29]},)"
                             R"("e":{"dtype":"I32","shape":[0,4],"data_offsets":[29,29]}}   )";
  std::string data;
  for (int i = 0; i < 29; ++i) data.push_back(static_cast<char>(i + 1));
  write_file(path_, safetensors_bytes(header, data));
  auto file = SafetensorsFile::open(path_);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  const auto& f = *file.value();
  ASSERT_EQ(f.tensors().size(), 4u);
  EXPECT_EQ(f.tensors()[0].name, "e");  // sorted by name
  EXPECT_EQ(f.tensors()[3].name, "z.a");
  const TensorInfo* a = f.find("z.a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::kF32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->offset, 0u);
  EXPECT_EQ(a->nbytes, 24u);
  const TensorInfo* s = f.find("s");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->nbytes, 2u);
  EXPECT_EQ(f.tensor_data(*s)[0], 25);  // byte 24 of the data section holds 25
  EXPECT_EQ(f.find("f")->dtype, DType::kF4E2M1);
  EXPECT_EQ(f.find("f")->nbytes, 3u);
  EXPECT_EQ(f.find("e")->nbytes, 0u);
  EXPECT_EQ(f.find("missing"), nullptr);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.metadata().at("k"), "v");
  EXPECT_EQ(f.data_section_bytes(), 29u);
  EXPECT_EQ(f.data_section(), f.mapping().data() + 8 + header.size());
}

TEST_F(SafetensorsReader, EmptyHeaderObjectIsAValidEmptyFile) { ASSERT_TRUE(open_bytes("{}      ", "").ok()); }

TEST_F(SafetensorsReader, MissingFileIsNotFound) {
  expect_error(SafetensorsFile::open(dir_.file("none.safetensors")).status(), StatusCode::kNotFound,
               {"none.safetensors"});
}

TEST_F(SafetensorsReader, FileShorterThanLengthField) {
  for (size_t n : {0, 1, 7}) {
    write_file(path_, std::string(n, '\0'));
    expect_error(SafetensorsFile::open(path_).status(), StatusCode::kCorruptFile, {path_, "too short"});
  }
}

TEST_F(SafetensorsReader, HeaderLengthBeyondFile) {
  write_file(path_, test::le64(100) + "{}");
  expect_error(SafetensorsFile::open(path_).status(), StatusCode::kCorruptFile,
               {path_, "header length 100 exceeds the 2 bytes after the length field"});
}

TEST_F(SafetensorsReader, AbsurdHeaderLength) {
  for (uint64_t n : {uint64_t{200} << 20, ~uint64_t{0}}) {
    write_file(path_, test::le64(n) + "{}");
    expect_error(SafetensorsFile::open(path_).status(), StatusCode::kCorruptFile, {path_, "-byte limit"});
  }
}

TEST_F(SafetensorsReader, HeaderNotJson) {
  expect_error(open_bytes(R"({"w": {"dtype": )", ""), StatusCode::kCorruptFile, {path_, "not valid JSON"});
  expect_error(open_bytes("{\"w\":\"\xff\xfe\"}", ""), StatusCode::kCorruptFile, {path_, "not valid JSON"});
  expect_error(open_bytes(std::string("{}\0\0\0\0\0\0", 8), ""), StatusCode::kCorruptFile, {path_, "not valid JSON"});
}

TEST_F(SafetensorsReader, DeeplyNestedHeaderIsRefusedWithoutCrashing) {
  const std::string deep = R"({"w":{"dtype":"F32","shape":)" + std::string(100000, '[') + std::string(100000, ']') +
                           R"(,"data_offsets":[0,4]}})";
  expect_tensor_error(deep, "abcd", StatusCode::kCorruptFile, "'shape' holds an array");
}

TEST_F(SafetensorsReader, DuplicateTensorName) {
  expect_tensor_error(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                      R"("w":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
                      "abcd", StatusCode::kCorruptFile, "appears twice in the header");
}

TEST_F(SafetensorsReader, HeaderNotAnObject) {
  expect_error(open_bytes("[1, 2]", ""), StatusCode::kCorruptFile, {path_, "expected a JSON object"});
}

TEST_F(SafetensorsReader, EntryNotAnObject) {
  expect_tensor_error(R"({"w": 5})", "", StatusCode::kCorruptFile, "expected an object");
}

TEST_F(SafetensorsReader, MissingFields) {
  expect_tensor_error(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", "abcd", StatusCode::kCorruptFile,
                      "missing 'dtype'");
  expect_tensor_error(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", "abcd", StatusCode::kCorruptFile,
                      "missing 'shape'");
  expect_tensor_error(R"({"w":{"dtype":"F32","shape":[1]}})", "abcd", StatusCode::kCorruptFile,
                      "missing 'data_offsets'");
}

TEST_F(SafetensorsReader, WrongJsonTypes) {
  const auto entry = [](const std::string& dtype, const std::string& shape, const std::string& offsets) {
    return R"({"w":{"dtype":)" + dtype + R"(,"shape":)" + shape + R"(,"data_offsets":)" + offsets + "}}";
  };
  expect_tensor_error(entry("5", "[1]", "[0,4]"), "abcd", StatusCode::kCorruptFile, "'dtype' is a number");
  expect_tensor_error(entry(R"("F32")", R"("1")", "[0,4]"), "abcd", StatusCode::kCorruptFile, "'shape' is a string");
  expect_tensor_error(entry(R"("F32")", "[1.0]", "[0,4]"), "abcd", StatusCode::kCorruptFile, "expected integers");
  expect_tensor_error(entry(R"("F32")", R"(["1"])", "[0,4]"), "abcd", StatusCode::kCorruptFile, "expected integers");
  for (const char* bad : {"[0]", "[0,4,4]", R"("0,4")", "[0.0,4]", "[-1,3]", "{}", "[null,4]"})
    expect_tensor_error(entry(R"("F32")", "[1]", bad), "abcd", StatusCode::kCorruptFile,
                        "is not [begin, end] of non-negative integers");
}

TEST_F(SafetensorsReader, UnknownDtypeIsUnsupported) {
  expect_tensor_error(R"({"w":{"dtype":"Q4_K","shape":[1],"data_offsets":[0,4]}})", "abcd", StatusCode::kUnsupported,
                      "unknown dtype 'Q4_K'");
}

TEST_F(SafetensorsReader, NegativeDimension) {
  expect_tensor_error(R"({"w":{"dtype":"F32","shape":[-2,3],"data_offsets":[0,4]}})", "abcd", StatusCode::kCorruptFile,
                      "negative dimension -2");
}

TEST_F(SafetensorsReader, ElementCountOverflow) {
  // 2^40 * 2^40 elements, a dimension beyond int64, and 2^62 * 8 elements all overflow the count.
  for (const char* shape : {"[1099511627776,1099511627776]", "[18446744073709551615]", "[4611686018427387904,8]"})
    expect_tensor_error(std::string(R"({"w":{"dtype":"F32","shape":)") + shape + R"(,"data_offsets":[0,4]}})", "abcd",
                        StatusCode::kCorruptFile, "overflows");
  // 2^60 f64 elements fit in int64 but their 2^66 bytes do not.
  expect_tensor_error(R"({"w":{"dtype":"F64","shape":[1152921504606846976],"data_offsets":[0,4]}})", "abcd",
                      StatusCode::kCorruptFile, "byte size of shape [1152921504606846976] overflows");
}

TEST_F(SafetensorsReader, OffsetsEndBeforeBegin) {
  expect_tensor_error(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", std::string(8, 'x'),
                      StatusCode::kCorruptFile, "data_offsets [8, 4) end before they begin");
}

TEST_F(SafetensorsReader, OffsetsBeyondDataSection) {
  expect_tensor_error(R"({"w":{"dtype":"BF16","shape":[65],"data_offsets":[0,130]}})", std::string(128, 'x'),
                      StatusCode::kCorruptFile, "data_offsets [0, 130) exceed the 128-byte data section");
  // Offsets near 2^64 must not wrap around.
  expect_tensor_error(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[18446744073709551612,18446744073709551615]}})",
                      std::string(8, 'x'), StatusCode::kCorruptFile, "exceed the 8-byte data section");
}

TEST_F(SafetensorsReader, SizeDisagreesWithDtypeAndShape) {
  expect_tensor_error(R"({"w":{"dtype":"BF16","shape":[3],"data_offsets":[0,4]}})", "abcd", StatusCode::kCorruptFile,
                      "data_offsets [0, 4) hold 4 bytes but BF16 [3] needs 6");
  // fp4 packs two per byte: 5 elements take 3 bytes.
  expect_tensor_error(R"({"w":{"dtype":"F4","shape":[5],"data_offsets":[0,2]}})", "abcd", StatusCode::kCorruptFile,
                      "hold 2 bytes but F4 [5] needs 3");
  EXPECT_TRUE(open_bytes(R"({"w":{"dtype":"F4","shape":[5],"data_offsets":[0,3]}})", "abc").ok());
}

TEST_F(SafetensorsReader, OverlappingTensors) {
  expect_error(open_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                          std::string(12, 'x')),
               StatusCode::kCorruptFile, {path_, "tensor 'w': data_offsets [4, 12) overlap tensor 'a' at [0, 8)"});
  // A tensor inside a larger one that is not its neighbour in offset order.
  expect_error(open_bytes(R"({"big":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                          R"("p":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                          R"("q":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                          std::string(16, 'x')),
               StatusCode::kCorruptFile, {path_, "overlap tensor 'big'"});
  // Empty tensors take no bytes and may share an offset with anything.
  EXPECT_TRUE(open_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("e1":{"dtype":"F32","shape":[0],"data_offsets":[2,2]},)"
                         R"("e2":{"dtype":"F32","shape":[0],"data_offsets":[2,2]}})",
                         "abcd")
                  .ok());
}

TEST_F(SafetensorsReader, MetadataMustMapStringsToStrings) {
  expect_error(open_bytes(R"({"__metadata__":[1]})", ""), StatusCode::kCorruptFile,
               {path_, "'__metadata__' is an array, expected an object"});
  expect_error(open_bytes(R"({"__metadata__":{"format":1}})", ""), StatusCode::kCorruptFile,
               {path_, "'__metadata__' entry 'format' is a number, expected a string"});
}

TEST_F(SafetensorsReader, ControlCharactersInNamesStayOnOneLine) {
  expect_error(open_bytes("{\"bad\\nname\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,8]}}", "abcd"),
               StatusCode::kCorruptFile, {path_, "tensor 'bad\\x0aname'"});
}

// Invariant: a file whose data section is fully used fails at every truncation, and never crashes.
TEST_F(SafetensorsReader, EveryTruncationIsRefused) {
  const std::string whole = safetensors_bytes(
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})",
      std::string(11, 'x'));
  write_file(path_, whole);
  ASSERT_TRUE(SafetensorsFile::open(path_).ok());
  for (size_t n = 0; n < whole.size(); ++n) {
    write_file(path_, whole.substr(0, n));
    auto r = SafetensorsFile::open(path_);
    EXPECT_FALSE(r.ok()) << "truncated to " << n << " bytes";
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kCorruptFile) << r.status().message();
    }
  }
}

// Invariant: flipping any single header byte either still parses or fails cleanly.
TEST_F(SafetensorsReader, ByteFlipsNeverCrash) {
  const std::string whole = safetensors_bytes(
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})",
      std::string(11, 'x'));
  for (size_t i = 0; i < whole.size() - 11; ++i) {
    for (int flip : {0x01, 0x10, 0x80}) {
      std::string bytes = whole;
      bytes[i] = static_cast<char>(bytes[i] ^ flip);
      write_file(path_, bytes);
      auto r = SafetensorsFile::open(path_);
      if (!r.ok()) {
        EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
      }
    }
  }
}

}  // namespace
}  // namespace ft
