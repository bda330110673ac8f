// PCRE2 regex: pattern rewriting for Oniguruma semantics, JIT compilation, match iteration.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include "core/check.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace ft::tok {
namespace {

constexpr std::string_view kWordClass = "\\p{L}\\p{M}\\p{N}\\p{Pc}";
constexpr size_t kJitStackMax = 64u << 20;

// Per-thread match data and JIT stack, shared by every Regex.
struct ThreadMatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 << 10, kJitStackMax, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  ThreadMatchState() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~ThreadMatchState() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

Result<std::string> rewrite_pattern(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char d = p[++i];
      const bool ws = d == 's' || d == 'S', word = d == 'w' || d == 'W';
      if (!ws && !word) {
        out += c;
        out += d;
        continue;
      }
      const std::string_view body = ws ? kWhiteSpaceClass : kWordClass;
      const bool negated = d == 'S' || d == 'W';
      if (in_class && negated)
        return unsupported("regex: \\" + std::string(1, d) + " inside a character class is not supported");
      if (in_class) {
        out += body;
      } else {
        out += negated ? "[^" : "[";
        out += body;
        out += ']';
      }
      continue;
    }
    out += c;
    if (c == '[' && !in_class) {
      in_class = true;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
    } else if (c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      const size_t close = p.find(":]", i + 2);
      if (close != std::string_view::npos) {
        out.append(p.substr(i + 1, close + 2 - (i + 1)));
        i = close + 1;
      }
    } else if (c == ']' && in_class) {
      in_class = false;
    }
  }
  return out;
}

Result<std::shared_ptr<const Regex>> Regex::compile(std::string_view pattern) {
  FT_ASSIGN_OR_RETURN(std::string rewritten, rewrite_pattern(pattern));
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return invalid_argument("regex '" + std::string(pattern) + "' does not compile at offset " +
                            std::to_string(offset) + ": " + reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // without JIT support the interpreter runs instead
  return std::shared_ptr<const Regex>(new Regex(code));
}

Result<std::shared_ptr<const Regex>> Regex::literal(std::string_view literal) {
  std::string quoted = "\\Q";
  for (size_t i = 0; i < literal.size(); ++i) {
    if (literal.compare(i, 2, "\\E") == 0) {
      quoted += "\\E\\\\E\\Q";
      ++i;
    } else {
      quoted += literal[i];
    }
  }
  quoted += "\\E";
  return compile(quoted);
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::find_all(std::string_view text, const std::function<void(size_t, size_t)>& on_match) const {
  auto* code = static_cast<pcre2_code*>(code_);
  ThreadMatchState& st = thread_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos <= text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, st.data, st.context);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    FT_CHECK_MSG(rc >= 0, "pcre2_match failed");
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
    on_match(ov[0], ov[1]);
    if (ov[1] > ov[0]) {
      pos = ov[1];
    } else {  // an empty match: step over one character
      if (ov[1] >= text.size()) return;
      pos = ov[1] + utf8_len(static_cast<unsigned char>(text[ov[1]]));
    }
  }
}

}  // namespace ft::tok
