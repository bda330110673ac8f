// Python str semantics over UTF-8: code-point length and slicing, Unicode whitespace, strip, split, case.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ft::tok::jinja {

std::vector<char32_t> utf8_decode(std::string_view s);
void utf8_append(std::string& out, char32_t c);
std::string utf8_encode(const std::vector<char32_t>& cps, size_t begin, size_t end);
size_t utf8_length(std::string_view s);

bool py_isspace(char32_t c);  // str.isspace()
// str.strip / lstrip / rstrip: whitespace when `chars` is empty, else any of the code points in `chars`.
std::string py_strip(std::string_view s, std::optional<std::string_view> chars, bool left, bool right);
// str.split / rsplit: by whitespace runs when `sep` is empty, else by `sep`; maxsplit < 0 means no limit.
std::vector<std::string> py_split(std::string_view s, std::optional<std::string_view> sep, int64_t maxsplit,
                                  bool from_right);
std::vector<std::string> py_splitlines(std::string_view s);  // str.splitlines()
std::string py_replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count);
// str.find in code points (-1 when absent); rfind when from_right.
int64_t py_find(std::string_view s, std::string_view sub, bool from_right);
int64_t py_count(std::string_view s, std::string_view sub);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);       // str.title()
std::string py_capitalize(std::string_view s);  // str.capitalize()
bool py_is_alpha(char32_t c);
bool py_is_digit(char32_t c);

}  // namespace ft::tok::jinja
