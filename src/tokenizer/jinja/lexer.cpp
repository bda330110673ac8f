// Jinja lexer (see lexer.h). Mirrors jinja2.lexer: newlines become "\n", one trailing newline is dropped,
// `{%-`/`-%}` strip all whitespace, lstrip_blocks strips a tag's indentation, trim_blocks eats one newline.
#include "tokenizer/jinja/lexer.h"

#include <cctype>
#include <cstring>

#include "tokenizer/jinja/py_str.h"

namespace ft::tok::jinja {
namespace {

std::string normalize_newlines(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

bool all_space(std::string_view s) {
  for (char32_t c : utf8_decode(s))
    if (!py_isspace(c)) return false;
  return true;
}

// Decodes a Python string literal body with the escapes of Python's "unicode-escape" codec.
Status unescape(std::string_view body, int line, std::string& out) {
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out += c;
      continue;
    }
    char e = body[++i];
    auto hex = [&](int n) -> Status {
      uint32_t v = 0;
      for (int k = 1; k <= n; ++k) {
        if (i + k >= body.size() || !std::isxdigit(static_cast<unsigned char>(body[i + k])))
          return invalid_argument("line " + std::to_string(line) + ": truncated escape in string literal");
        char h = body[i + k];
        v = v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      utf8_append(out, v);
      i += n;
      return ok_status();
    };
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\n': break;
      case 'x': FT_RETURN_IF_ERROR(hex(2)); break;
      case 'u': FT_RETURN_IF_ERROR(hex(4)); break;
      case 'U': FT_RETURN_IF_ERROR(hex(8)); break;
      default:
        if (e >= '0' && e <= '7') {
          uint32_t v = static_cast<uint32_t>(e - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
            v = v * 8 + static_cast<uint32_t>(body[++i] - '0');
          utf8_append(out, v);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return ok_status();
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(normalize_newlines(source)) {}

  Result<std::vector<Token>> run() {
    size_t pos = 0;
    while (pos < src_.size()) {
      size_t start = find_tag(pos);
      std::string text = src_.substr(pos, start - pos);
      if (start == src_.size()) {
        emit_text(std::move(text), pos);
        break;
      }
      char kind = src_[start + 1];  // '{', '%' or '#'
      char marker = start + 2 < src_.size() ? src_[start + 2] : '\0';
      if (marker == '-') {
        text = py_strip(text, std::nullopt, false, true);
      } else if (marker != '+' && kind != '{') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting_) && l_pos < text.size() && all_space(std::string_view(text).substr(l_pos)))
          text.resize(l_pos);
      }
      emit_text(std::move(text), pos);
      line_ = line_at(start);
      size_t body = start + 2 + ((marker == '-' || marker == '+') ? 1 : 0);
      if (kind == '#') {
        size_t end = src_.find("#}", body);
        if (end == std::string::npos) return error(line_, "unclosed comment");
        pos = finish_tag(end, end + 2, true);
        continue;
      }
      bool block = kind == '%';
      tokens_.push_back({block ? TokenType::kBlockBegin : TokenType::kVarBegin, "", line_});
      size_t first_token = tokens_.size();
      FT_ASSIGN_OR_RETURN(pos, lex_expression(body, block));
      if (block && tokens_.size() == first_token + 2 && tokens_[first_token].type == TokenType::kName &&
          tokens_[first_token].text == "raw") {
        tokens_.resize(first_token - 1);
        FT_ASSIGN_OR_RETURN(pos, lex_raw(pos));
      }
    }
    tokens_.push_back({TokenType::kEnd, "", line_at(src_.size())});
    return std::move(tokens_);
  }

 private:
  static Status error(int line, const std::string& msg) {
    return invalid_argument("template line " + std::to_string(line) + ": " + msg);
  }

  int line_at(size_t pos) {
    for (; counted_ < pos && counted_ < src_.size(); ++counted_)
      if (src_[counted_] == '\n') ++counted_line_;
    return counted_line_;
  }

  size_t find_tag(size_t pos) const {
    for (size_t i = src_.find('{', pos); i != std::string::npos; i = src_.find('{', i + 1))
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return src_.size();
  }

  void emit_text(std::string text, size_t pos) {
    if (text.empty()) return;
    line_starting_ = text.back() == '\n';
    tokens_.push_back({TokenType::kText, std::move(text), line_at(pos)});
  }

  // Handles the end of a tag whose closing delimiter spans [end, after): '-' strips following whitespace,
  // '+' keeps it, otherwise trim_blocks eats one newline after block and comment tags.
  size_t finish_tag(size_t end, size_t after, bool block) {
    char marker = end > 0 ? src_[end - 1] : '\0';
    size_t pos = after;
    if (marker == '-') {
      while (pos < src_.size()) {
        size_t n = 1;
        unsigned char c = static_cast<unsigned char>(src_[pos]);
        if (c >= 0x80) {
          std::vector<char32_t> cp = utf8_decode(std::string_view(src_).substr(pos, 4));
          if (cp.empty() || !py_isspace(cp[0])) break;
          std::string enc;
          utf8_append(enc, cp[0]);
          n = enc.size();
        } else if (!py_isspace(c)) {
          break;
        }
        pos += n;
      }
    } else if (block && marker != '+' && pos < src_.size() && src_[pos] == '\n') {
      ++pos;
    }
    line_starting_ = src_[pos - 1] == '\n';
    return pos;
  }

  Result<size_t> lex_expression(size_t pos, bool block) {
    const char* close = block ? "%}" : "}}";
    int depth = 0;
    while (true) {
      while (pos < src_.size() && std::isspace(static_cast<unsigned char>(src_[pos]))) ++pos;
      if (pos >= src_.size()) return error(line_, block ? "unclosed block tag" : "unclosed variable tag");
      int line = line_at(pos);
      bool marked = (src_[pos] == '-' || src_[pos] == '+') && src_.compare(pos + 1, 2, close) == 0;
      if (depth == 0 && (marked || src_.compare(pos, 2, close) == 0)) {
        size_t end = marked ? pos + 1 : pos;
        tokens_.push_back({block ? TokenType::kBlockEnd : TokenType::kVarEnd, "", line});
        return finish_tag(end, end + 2, block);
      }
      char c = src_[pos];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t b = pos;
        while (pos < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos])) || src_[pos] == '_')) ++pos;
        tokens_.push_back({TokenType::kName, src_.substr(b, pos - b), line});
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t b = pos;
        bool is_float = false;
        while (pos < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos])) || src_[pos] == '_')) ++pos;
        if (pos + 1 < src_.size() && src_[pos] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos + 1]))) {
          is_float = true;
          ++pos;
          while (pos < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos])) || src_[pos] == '_')) ++pos;
        }
        if (pos < src_.size() && (src_[pos] == 'e' || src_[pos] == 'E')) {
          size_t e = pos + 1;
          if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
          if (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) {
            is_float = true;
            pos = e;
            while (pos < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos]))) ++pos;
          }
        }
        std::string num;
        for (size_t k = b; k < pos; ++k)
          if (src_[k] != '_') num += src_[k];
        tokens_.push_back({is_float ? TokenType::kFloat : TokenType::kInteger, num, line});
      } else if (c == '\'' || c == '"') {
        size_t b = ++pos;
        while (pos < src_.size() && src_[pos] != c) pos += src_[pos] == '\\' ? 2 : 1;
        if (pos >= src_.size()) return error(line, "unterminated string literal");
        std::string value;
        FT_RETURN_IF_ERROR(unescape(std::string_view(src_).substr(b, pos - b), line, value));
        tokens_.push_back({TokenType::kString, std::move(value), line});
        ++pos;
      } else {
        static const char* const kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "*", "/", "%", "~", "<",
                                           ">",  "=",  "(",  ")",  "[",  "]",  "{", "}", ",", ".", ":", "|"};
        const char* op = nullptr;
        for (const char* o : kOps)
          if (src_.compare(pos, std::strlen(o), o) == 0) {
            op = o;
            break;
          }
        if (!op) return error(line, std::string("unexpected character '") + c + "'");
        if (*op == '(' || *op == '[' || *op == '{') ++depth;
        if ((*op == ')' || *op == ']' || *op == '}') && depth > 0) --depth;
        tokens_.push_back({TokenType::kOperator, op, line});
        pos += std::strlen(op);
      }
    }
  }

  // After {% raw %}: everything up to {% endraw %} is text.
  Result<size_t> lex_raw(size_t pos) {
    for (size_t i = src_.find("{%", pos); i != std::string::npos; i = src_.find("{%", i + 2)) {
      size_t k = i + 2;
      char marker = k < src_.size() ? src_[k] : '\0';
      if (marker == '-' || marker == '+') ++k;
      while (k < src_.size() && std::isspace(static_cast<unsigned char>(src_[k]))) ++k;
      if (src_.compare(k, 6, "endraw") != 0) continue;
      k += 6;
      while (k < src_.size() && std::isspace(static_cast<unsigned char>(src_[k]))) ++k;
      bool end_marked = k < src_.size() && (src_[k] == '-' || src_[k] == '+');
      size_t close = end_marked ? k + 1 : k;
      if (src_.compare(close, 2, "%}") != 0) continue;
      std::string text = src_.substr(pos, i - pos);
      if (marker == '-') text = py_strip(text, std::nullopt, false, true);
      emit_text(std::move(text), pos);
      return finish_tag(close, close + 2, true);
    }
    return error(line_, "missing {% endraw %}");
  }

  std::string src_;
  std::vector<Token> tokens_;
  bool line_starting_ = true;
  int line_ = 1;
  size_t counted_ = 0;
  int counted_line_ = 1;
};

}  // namespace

Result<std::vector<Token>> tokenize(const std::string& source) { return Lexer(source).run(); }

}  // namespace ft::tok::jinja
