// Unicode character classes as Rust and Hugging Face tokenizers define them (backed by ICU).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ft::tok {

// Rust char::is_whitespace: the Unicode White_Space property.
bool is_white_space(uint32_t cp);
// Rust char::is_numeric: general categories Nd, Nl, No.
bool is_numeric(uint32_t cp);
// Rust regex \w: Alphabetic, Mark, Decimal_Number, Connector_Punctuation, Join_Control.
bool is_word_char(uint32_t cp);
// Rust char::to_lowercase for one code point (full, context-free mapping), appended to out.
void append_lowercase(std::string& out, uint32_t cp);

// A regex character-class body listing exactly the White_Space code points (PCRE2 syntax).
inline constexpr std::string_view kWhiteSpaceClass =
    "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

}  // namespace ft::tok
