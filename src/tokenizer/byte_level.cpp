// GPT-2 bytes_to_unicode: printable Latin-1 bytes map to themselves, the rest to U+0100 onwards.
#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace ft::tok {
namespace {

struct Tables {
  std::array<std::string, 256> to_char;
  std::array<int16_t, 512> to_byte{};  // indexed by code point (all mapped code points are < 0x144)
  Tables() {
    to_byte.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae);
      const uint32_t cp = printable ? b : next++;
      utf8_append(to_char[b], cp);
      to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::string& byte_to_char(uint8_t b) { return tables().to_char[b]; }

void append_byte_level(std::string& out, std::string_view bytes) {
  const Tables& t = tables();
  for (char c : bytes) out += t.to_char[static_cast<uint8_t>(c)];
}

int char_to_byte(uint32_t cp) { return cp < 512 ? tables().to_byte[cp] : -1; }

}  // namespace ft::tok
