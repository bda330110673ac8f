// Status / Result and the FT_RETURN_IF_ERROR / FT_ASSIGN_OR_RETURN macros: values, propagation, formatting.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "freetoken/status.h"

namespace ft {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return invalid_argument("not positive: " + std::to_string(v));
  return v;
}

Status check_all(int a, int b) {
  FT_RETURN_IF_ERROR(parse_positive(a).status());
  FT_RETURN_IF_ERROR(parse_positive(b).status());
  return ok_status();
}

Result<int> add_positive(int a, int b) {
  FT_ASSIGN_OR_RETURN(int x, parse_positive(a));
  FT_ASSIGN_OR_RETURN(int y, parse_positive(b));
  return x + y;
}

Result<std::unique_ptr<int>> boxed(int v) {
  if (v < 0) return not_found("negative");
  return std::make_unique<int>(v);
}

Result<int> unbox(int v) {
  FT_ASSIGN_OR_RETURN(std::unique_ptr<int> p, boxed(v));
  return *p + 1;
}

TEST(Status, CodesAndFormatting) {
  EXPECT_TRUE(ok_status().ok());
  EXPECT_EQ(ok_status().to_string(), "ok");
  Status s = corrupt_file("x.safetensors: bad");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  EXPECT_EQ(s.to_string(), "corrupt file: x.safetensors: bad");
  EXPECT_EQ(not_found("m").to_string(), "not found: m");
  EXPECT_EQ(unsupported("m").code(), StatusCode::kUnsupported);
}

TEST(Status, ReturnIfErrorStopsAtTheFirstFailure) {
  EXPECT_TRUE(check_all(1, 2).ok());
  EXPECT_EQ(check_all(-1, -2).message(), "not positive: -1");
  EXPECT_EQ(check_all(1, -2).message(), "not positive: -2");
}

TEST(Status, AssignOrReturnTwiceInOneFunction) {
  auto r = add_positive(2, 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), 5);
  EXPECT_EQ(*r, 5);
  auto bad = add_positive(2, 0);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "not positive: 0");
  EXPECT_TRUE(r.status().ok());
}

TEST(Status, MoveOnlyValues) {
  EXPECT_EQ(unbox(41).value(), 42);
  EXPECT_EQ(unbox(-1).status().code(), StatusCode::kNotFound);
  auto b = boxed(7);
  std::unique_ptr<int> p = std::move(b).value();
  EXPECT_EQ(*p, 7);
}

}  // namespace
}  // namespace ft
