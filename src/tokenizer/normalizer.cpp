// Normalizer implementations; Unicode normal forms go through ICU's Normalizer2 on UTF-8 directly.
#include "tokenizer/normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "tokenizer/pattern.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace ft::tok {
namespace {

bool is_ascii(const std::string& s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(const icu::Normalizer2* form) : form_(form) {}
  void normalize(std::string& s) const override {
    if (is_ascii(s)) return;  // ASCII is invariant under every normal form
    UErrorCode err = U_ZERO_ERROR;
    if (form_->isNormalizedUTF8(s, err) && U_SUCCESS(err)) return;
    std::string out;
    icu::StringByteSink<std::string> sink(&out, static_cast<int32_t>(s.size()));
    err = U_ZERO_ERROR;
    form_->normalizeUTF8(0, s, sink, nullptr, err);
    if (U_SUCCESS(err)) s = std::move(out);
  }

 private:
  const icu::Normalizer2* form_;
};

class Lowercase final : public Normalizer {
 public:
  void normalize(std::string& s) const override {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) append_lowercase(out, utf8_next(s, i));
    s = std::move(out);
  }
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& s) const override {
    size_t begin = 0, end = s.size();
    if (left_) {
      while (begin < end) {
        size_t next = begin;
        if (!is_white_space(utf8_next(s, next))) break;
        begin = next;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start = 0;
        if (!is_white_space(utf8_prev(s, end, start))) break;
        end = start;
      }
    }
    s = s.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

class Replace final : public Normalizer {
 public:
  Replace(std::shared_ptr<const Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string& s) const override {
    std::string out;
    size_t last = 0;
    pattern_->find_all(s, [&](size_t b, size_t e) {
      out.append(s, last, b - last);
      out += content_;
      last = e;
    });
    out.append(s, last, std::string::npos);
    s = std::move(out);
  }

 private:
  std::shared_ptr<const Regex> pattern_;
  std::string content_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& s) const override {
    if (!s.empty()) s.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(std::string& s) const override {
    for (const auto& n : steps_) n->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

Result<const icu::Normalizer2*> icu_form(const std::string& type) {
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* form = nullptr;
  if (type == "NFC") form = icu::Normalizer2::getNFCInstance(err);
  if (type == "NFD") form = icu::Normalizer2::getNFDInstance(err);
  if (type == "NFKC") form = icu::Normalizer2::getNFKCInstance(err);
  if (type == "NFKD") form = icu::Normalizer2::getNFKDInstance(err);
  if (!form || U_FAILURE(err)) return internal_error(std::string("ICU has no ") + type + " normalizer");
  return form;
}

}  // namespace

Result<std::unique_ptr<Normalizer>> make_normalizer(const nlohmann::json& spec) {
  if (spec.is_null()) return std::unique_ptr<Normalizer>();
  const std::string type = spec.value("type", "");
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    FT_ASSIGN_OR_RETURN(const icu::Normalizer2* form, icu_form(type));
    return std::unique_ptr<Normalizer>(new UnicodeForm(form));
  }
  if (type == "Lowercase") return std::unique_ptr<Normalizer>(new Lowercase());
  if (type == "Strip")
    return std::unique_ptr<Normalizer>(new Strip(spec.value("strip_left", true), spec.value("strip_right", true)));
  if (type == "Prepend") return std::unique_ptr<Normalizer>(new Prepend(spec.at("prepend").get<std::string>()));
  if (type == "Replace") {
    FT_ASSIGN_OR_RETURN(auto pattern, make_pattern(spec.at("pattern"), "Replace normalizer"));
    return std::unique_ptr<Normalizer>(new Replace(std::move(pattern), spec.at("content").get<std::string>()));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const auto& s : spec.at("normalizers")) {
      FT_ASSIGN_OR_RETURN(auto step, make_normalizer(s));
      if (step) steps.push_back(std::move(step));
    }
    return std::unique_ptr<Normalizer>(new Sequence(std::move(steps)));
  }
  return unsupported("unsupported normalizer type '" + type + "'");
}

}  // namespace ft::tok
