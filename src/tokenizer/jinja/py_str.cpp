// Python str semantics over UTF-8 (see py_str.h); case mapping through ICU.
#include "tokenizer/jinja/py_str.h"

#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

namespace ft::tok::jinja {

std::vector<char32_t> utf8_decode(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (i + n > s.size()) n = 1;
    char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    out.push_back(cp);
    i += n;
  }
  return out;
}

void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

std::string utf8_encode(const std::vector<char32_t>& cps, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) utf8_append(out, cps[i]);
  return out;
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

bool py_isspace(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

std::string py_strip(std::string_view s, std::optional<std::string_view> chars, bool left, bool right) {
  std::vector<char32_t> cps = utf8_decode(s);
  std::vector<char32_t> set = chars ? utf8_decode(*chars) : std::vector<char32_t>{};
  auto strip_it = [&](char32_t c) {
    if (!chars) return py_isspace(c);
    for (char32_t x : set)
      if (x == c) return true;
    return false;
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b])) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1])) --e;
  return utf8_encode(cps, b, e);
}

std::vector<std::string> py_split(std::string_view s, std::optional<std::string_view> sep, int64_t maxsplit,
                                  bool from_right) {
  std::vector<std::string> parts;
  if (sep) {
    if (!from_right) {
      size_t pos = 0;
      while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        size_t hit = s.find(*sep, pos);
        if (hit == std::string_view::npos) break;
        parts.emplace_back(s.substr(pos, hit - pos));
        pos = hit + sep->size();
      }
      parts.emplace_back(s.substr(pos));
      return parts;
    }
    size_t end = s.size();
    std::vector<std::string> rev;
    while (maxsplit < 0 || static_cast<int64_t>(rev.size()) < maxsplit) {
      if (end < sep->size()) break;
      size_t hit = s.rfind(*sep, end - sep->size());
      if (hit == std::string_view::npos) break;
      rev.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    rev.emplace_back(s.substr(0, end));
    return {rev.rbegin(), rev.rend()};
  }
  std::vector<char32_t> cps = utf8_decode(s);
  std::vector<std::pair<size_t, size_t>> words;
  for (size_t i = 0; i < cps.size();) {
    while (i < cps.size() && py_isspace(cps[i])) ++i;
    if (i == cps.size()) break;
    size_t j = i;
    while (j < cps.size() && !py_isspace(cps[j])) ++j;
    words.emplace_back(i, j);
    i = j;
  }
  if (maxsplit < 0 || static_cast<int64_t>(words.size()) <= maxsplit) {
    for (auto [b, e] : words) parts.push_back(utf8_encode(cps, b, e));
    return parts;
  }
  if (!from_right) {
    for (int64_t k = 0; k < maxsplit; ++k) parts.push_back(utf8_encode(cps, words[k].first, words[k].second));
    size_t rest = words[maxsplit].first;
    size_t end = cps.size();
    // Python keeps trailing whitespace in the last piece of split(None, n).
    parts.push_back(utf8_encode(cps, rest, end));
    return parts;
  }
  size_t first = words.size() - static_cast<size_t>(maxsplit);
  size_t b = 0;
  parts.push_back(utf8_encode(cps, b, words[first - 1].second));
  for (size_t k = first; k < words.size(); ++k) parts.push_back(utf8_encode(cps, words[k].first, words[k].second));
  return parts;
}

std::vector<std::string> py_splitlines(std::string_view s) {
  std::vector<char32_t> cps = utf8_decode(s);
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    char32_t c = cps[i];
    bool brk = c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d || c == 0x1e ||
               c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!brk) continue;
    lines.push_back(utf8_encode(cps, start, i));
    if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
    start = i + 1;
  }
  if (start < cps.size()) lines.push_back(utf8_encode(cps, start, cps.size()));
  return lines;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count) {
  std::string out;
  if (old.empty()) {  // Python inserts repl between every code point
    std::vector<char32_t> cps = utf8_decode(s);
    int64_t done = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += repl;
        ++done;
      }
      if (i < cps.size()) utf8_append(out, cps[i]);
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(repl);
    pos = hit + old.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

int64_t py_find(std::string_view s, std::string_view sub, bool from_right) {
  size_t hit = from_right ? s.rfind(sub) : s.find(sub);
  if (hit == std::string_view::npos) return -1;
  return static_cast<int64_t>(utf8_length(s.substr(0, hit)));
}

int64_t py_count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(utf8_length(s)) + 1;
  int64_t n = 0;
  for (size_t pos = s.find(sub); pos != std::string_view::npos; pos = s.find(sub, pos + sub.size())) ++n;
  return n;
}

namespace {
std::string icu_case(std::string_view s, bool upper) {
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), static_cast<int32_t>(s.size())));
  if (upper) u.toUpper(icu::Locale::getRoot());
  else u.toLower(icu::Locale::getRoot());
  std::string out;
  u.toUTF8String(out);
  return out;
}
bool is_cased(char32_t c) { return u_isULowercase(c) || u_isUUppercase(c) || u_istitle(c); }
}  // namespace

std::string py_upper(std::string_view s) { return icu_case(s, true); }
std::string py_lower(std::string_view s) { return icu_case(s, false); }

std::string py_title(std::string_view s) {
  std::string out;
  bool prev_cased = false;
  for (char32_t c : utf8_decode(s)) {
    utf8_append(out, prev_cased ? static_cast<char32_t>(u_tolower(c)) : static_cast<char32_t>(u_totitle(c)));
    prev_cased = is_cased(c);
  }
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::vector<char32_t> cps = utf8_decode(s);
  std::string out;
  for (size_t i = 0; i < cps.size(); ++i)
    utf8_append(out, i == 0 ? static_cast<char32_t>(u_totitle(cps[i])) : static_cast<char32_t>(u_tolower(cps[i])));
  return out;
}

bool py_is_alpha(char32_t c) { return u_isalpha(c); }
bool py_is_digit(char32_t c) { return u_isdigit(c); }

}  // namespace ft::tok::jinja
