// Unicode character classes through ICU's property tables.
#include "tokenizer/unicode.h"

#include <unicode/uchar.h>

#include "tokenizer/utf8.h"

namespace ft::tok {

bool is_white_space(uint32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0d);
  return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_WHITE_SPACE);
}

bool is_numeric(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  const int8_t t = u_charType(static_cast<UChar32>(cp));
  return t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
}

bool is_word_char(uint32_t cp) {
  const auto c = static_cast<UChar32>(cp);
  if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL)) return true;
  const int32_t mask = U_GET_GC_MASK(c);
  return (mask & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

void append_lowercase(std::string& out, uint32_t cp) {
  if (cp == 0x130) {  // the one unconditional multi-code-point lowercase mapping (SpecialCasing.txt)
    out += "i\xcc\x87";
    return;
  }
  utf8_append(out, static_cast<uint32_t>(u_tolower(static_cast<UChar32>(cp))));
}

}  // namespace ft::tok
