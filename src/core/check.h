// FT_CHECK: broken invariants abort with file and line (bugs, not user errors).
#pragma once

#include <cstdio>
#include <cstdlib>

namespace ft::detail {
[[noreturn]] void check_failed(const char* file, int line, const char* expr, const char* msg);
}  // namespace ft::detail

#define FT_CHECK(cond)                                                              \
  do {                                                                              \
    if (!(cond)) ::ft::detail::check_failed(__FILE__, __LINE__, #cond, nullptr);    \
  } while (0)

#define FT_CHECK_MSG(cond, msg)                                                     \
  do {                                                                              \
    if (!(cond)) ::ft::detail::check_failed(__FILE__, __LINE__, #cond, (msg));      \
  } while (0)
