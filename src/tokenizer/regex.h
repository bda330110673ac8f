// A compiled PCRE2 (UTF, UCP, JIT) regex with Oniguruma's meaning of \s and \w, as HF tokenizers uses.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "freetoken/status.h"

namespace ft::tok {

class Regex {
 public:
  // Compiles `pattern`; `\s`, `\S`, `\w`, `\W` are rewritten to Unicode White_Space / word classes.
  static Result<std::shared_ptr<const Regex>> compile(std::string_view pattern);
  // A regex matching `literal` exactly.
  static Result<std::shared_ptr<const Regex>> literal(std::string_view literal);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Calls on_match(start, end) for each successive non-overlapping match in `text` (valid UTF-8).
  void find_all(std::string_view text, const std::function<void(size_t, size_t)>& on_match) const;

 private:
  explicit Regex(void* code) : code_(code) {}
  void* code_;  // pcre2_code_8*
};

// Rewrites Oniguruma-flavoured escapes into PCRE2 classes with the same meaning (exposed for tests).
Result<std::string> rewrite_pattern(std::string_view pattern);

}  // namespace ft::tok
