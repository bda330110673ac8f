// GPT-2's byte <-> printable-character mapping used by the ByteLevel pre-tokenizer and decoder.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ft::tok {

// The UTF-8 text of the character that stands for byte b.
const std::string& byte_to_char(uint8_t b);
// Appends the mapped characters of every byte of `bytes` to out.
void append_byte_level(std::string& out, std::string_view bytes);
// The byte a mapped code point stands for, or -1 when cp is not one of the 256 mapped characters.
int char_to_byte(uint32_t cp);

}  // namespace ft::tok
