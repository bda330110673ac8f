// Pre-tokenizer implementations: each one cuts or rewrites the pieces produced by the previous one.
#include "tokenizer/pre_tokenizer.h"

#include <unicode/uchar.h>

#include <cctype>
#include <functional>
#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"
#include "tokenizer/pattern.h"
#include "tokenizer/split_behavior.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace ft::tok {
namespace {

// GPT-2's pre-tokenizer regex, used by ByteLevel with use_regex.
constexpr const char* kGpt2Pattern = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

using SpanFinder = std::function<std::vector<Span>(const std::string&)>;

// Cuts every piece along the spans `find` reports, keeping what `behavior` keeps.
void split_pieces(std::vector<Piece>& pieces, const SpanFinder& find, SplitBehavior behavior) {
  std::vector<Piece> out;
  out.reserve(pieces.size() * 2);
  for (Piece& p : pieces) {
    const std::vector<Span> spans = apply_split_behavior(find(p.text), behavior);
    if (spans.size() == 1 && spans[0].begin == 0 && spans[0].end == p.text.size()) {
      out.push_back(std::move(p));
      continue;
    }
    for (const Span& s : spans)
      if (s.end > s.begin) out.push_back({p.text.substr(s.begin, s.end - s.begin), p.at_start && s.begin == 0});
  }
  pieces = std::move(out);
}

SpanFinder regex_spans(std::shared_ptr<const Regex> re, bool invert) {
  return [re = std::move(re), invert](const std::string& text) {
    std::vector<Span> spans;
    size_t prev = 0;
    re->find_all(text, [&](size_t b, size_t e) {
      if (prev != b) spans.push_back({prev, b, invert});
      spans.push_back({b, e, !invert});
      prev = e;
    });
    if (prev != text.size() || spans.empty()) spans.push_back({prev, text.size(), invert});
    return spans;
  };
}

// Every character for which `pred` holds is a match of its own.
SpanFinder char_spans(bool (*pred)(uint32_t)) {
  return [pred](const std::string& text) {
    std::vector<Span> spans;
    size_t last = 0;
    for (size_t i = 0; i < text.size();) {
      const size_t b = i;
      if (pred(utf8_next(text, i))) {
        if (last < b) spans.push_back({last, b, false});
        spans.push_back({b, i, true});
        last = i;
      }
    }
    if (last < text.size() || spans.empty()) spans.push_back({last, text.size(), false});
    return spans;
  };
}

// tokenizers' is_punc: ASCII punctuation or general category P*, from the unicode_categories crate,
// whose tables are Unicode 9.0: later characters (e.g. U+061D, Unicode 14) are not punctuation there.
bool is_punctuation(uint32_t cp) {
  if (cp < 0x80) return cp > 0x20 && cp < 0x7f && !std::isalnum(static_cast<int>(cp));
  const auto c = static_cast<UChar32>(cp);
  UVersionInfo age;
  u_charAge(c, age);
  return age[0] <= 9 && (U_GET_GC_MASK(c) & U_GC_P_MASK) != 0;
}

class Split final : public PreTokenizer {
 public:
  Split(std::shared_ptr<const Regex> re, SplitBehavior behavior, bool invert)
      : find_(regex_spans(std::move(re), invert)), behavior_(behavior) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override { split_pieces(pieces, find_, behavior_); }

 private:
  SpanFinder find_;
  SplitBehavior behavior_;
};

class CharSplit final : public PreTokenizer {
 public:
  CharSplit(bool (*pred)(uint32_t), SplitBehavior behavior) : find_(char_spans(pred)), behavior_(behavior) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override { split_pieces(pieces, find_, behavior_); }

 private:
  SpanFinder find_;
  SplitBehavior behavior_;
};

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, std::shared_ptr<const Regex> re)
      : add_prefix_space_(add_prefix_space), find_(re ? regex_spans(std::move(re), false) : SpanFinder()) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    if (add_prefix_space_)
      for (Piece& p : pieces)
        if (p.text.empty() || p.text[0] != ' ') p.text.insert(0, 1, ' ');
    if (find_) split_pieces(pieces, find_, SplitBehavior::kIsolated);
    std::string mapped;
    for (Piece& p : pieces) {
      mapped.clear();
      append_byte_level(mapped, p.text);
      p.text.swap(mapped);
    }
  }

 private:
  bool add_prefix_space_;
  SpanFinder find_;
};

enum class PrependScheme { kAlways, kNever, kFirst };

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (Piece& p : pieces) {
      std::string out;
      out.reserve(p.text.size() + replacement_.size());
      for (char c : p.text) {
        if (c == ' ') {
          out += replacement_;
        } else {
          out += c;
        }
      }
      const bool starts = out.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts && (scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && p.at_start)))
        out.insert(0, replacement_);
      p.text = std::move(out);
    }
    if (!split_) return;
    split_pieces(
        pieces,
        [this](const std::string& text) {
          std::vector<Span> spans;
          size_t last = 0;
          for (size_t i = text.find(replacement_); i != std::string::npos; i = text.find(replacement_, i)) {
            if (last < i) spans.push_back({last, i, false});
            spans.push_back({i, i + replacement_.size(), true});
            i += replacement_.size();
            last = i;
          }
          if (last < text.size() || spans.empty()) spans.push_back({last, text.size(), false});
          return spans;
        },
        SplitBehavior::kMergedWithNext);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (const auto& s : steps_) s->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

Result<std::unique_ptr<PreTokenizer>> make_metaspace(const nlohmann::json& spec) {
  std::string replacement = spec.value("replacement", std::string("\xe2\x96\x81"));
  PrependScheme scheme = spec.value("add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
  if (spec.contains("prepend_scheme")) {
    const std::string s = spec["prepend_scheme"].get<std::string>();
    if (s == "always") {
      scheme = PrependScheme::kAlways;
    } else if (s == "never") {
      scheme = PrependScheme::kNever;
    } else if (s == "first") {
      scheme = PrependScheme::kFirst;
    } else {
      return unsupported("Metaspace pre-tokenizer: unknown prepend_scheme '" + s + "'");
    }
  }
  return std::unique_ptr<PreTokenizer>(new Metaspace(std::move(replacement), scheme, spec.value("split", true)));
}

}  // namespace

Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const nlohmann::json& spec) {
  if (spec.is_null()) return std::unique_ptr<PreTokenizer>();
  const std::string type = spec.value("type", "");
  if (type == "Split") {
    FT_ASSIGN_OR_RETURN(auto re, make_pattern(spec.at("pattern"), "Split pre-tokenizer"));
    FT_ASSIGN_OR_RETURN(SplitBehavior behavior, parse_split_behavior(spec.at("behavior").get<std::string>()));
    return std::unique_ptr<PreTokenizer>(new Split(std::move(re), behavior, spec.value("invert", false)));
  }
  if (type == "ByteLevel") {
    std::shared_ptr<const Regex> re;
    if (spec.value("use_regex", true)) {
      FT_ASSIGN_OR_RETURN(re, Regex::compile(kGpt2Pattern));
    }
    return std::unique_ptr<PreTokenizer>(new ByteLevel(spec.value("add_prefix_space", true), std::move(re)));
  }
  if (type == "Metaspace") return make_metaspace(spec);
  if (type == "Digits") {
    const auto behavior = spec.value("individual_digits", false) ? SplitBehavior::kIsolated : SplitBehavior::kContiguous;
    return std::unique_ptr<PreTokenizer>(new CharSplit(is_numeric, behavior));
  }
  if (type == "Punctuation") {
    FT_ASSIGN_OR_RETURN(SplitBehavior behavior, parse_split_behavior(spec.value("behavior", std::string("Isolated"))));
    return std::unique_ptr<PreTokenizer>(new CharSplit(is_punctuation, behavior));
  }
  if (type == "WhitespaceSplit") return std::unique_ptr<PreTokenizer>(new CharSplit(is_white_space, SplitBehavior::kRemoved));
  if (type == "Whitespace") {
    FT_ASSIGN_OR_RETURN(auto re, Regex::compile("\\w+|[^\\w\\s]+"));
    return std::unique_ptr<PreTokenizer>(new Split(std::move(re), SplitBehavior::kRemoved, true));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const auto& s : spec.at("pretokenizers")) {
      FT_ASSIGN_OR_RETURN(auto step, make_pre_tokenizer(s));
      if (step) steps.push_back(std::move(step));
    }
    return std::unique_ptr<PreTokenizer>(new Sequence(std::move(steps)));
  }
  return unsupported("unsupported pre-tokenizer type '" + type + "'");
}

}  // namespace ft::tok
