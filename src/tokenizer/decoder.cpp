// Decoder implementations, each mirroring the decode_chain of its tokenizers counterpart.
#include "tokenizer/decoder.h"

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"
#include "tokenizer/pattern.h"
#include "tokenizer/utf8.h"

namespace ft::tok {
namespace {

constexpr const char* kReplacementChar = "\xef\xbf\xbd";

// Maps each token's characters back to bytes, joins them and repairs invalid UTF-8 with U+FFFD.
class ByteLevel final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      const size_t mark = bytes.size();
      bool mapped = true;
      for (size_t i = 0; i < t.size() && mapped;) {
        const int b = char_to_byte(utf8_next(t, i));
        if (b < 0) {
          mapped = false;
        } else {
          bytes.push_back(static_cast<char>(b));
        }
      }
      if (!mapped) {  // a token outside the byte alphabet is kept as its own bytes
        bytes.resize(mark);
        bytes += t;
      }
    }
    tokens.assign(1, utf8_is_valid(bytes) ? std::move(bytes) : utf8_lossy(bytes));
  }
};

class Metaspace final : public Decoder {
 public:
  Metaspace(std::string replacement, bool strip_first) : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t k = 0; k < tokens.size(); ++k) {
      std::string out;
      const std::string& t = tokens[k];
      for (size_t i = 0; i < t.size();) {
        if (t.compare(i, replacement_.size(), replacement_) == 0) {
          if (k != 0 || !strip_first_) out += ' ';
          i += replacement_.size();
        } else {
          out += t[i++];
        }
      }
      tokens[k] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

bool byte_token(const std::string& t, uint8_t& byte) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return false;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(t[3]), lo = hex(t[4]);
  if (hi < 0 || lo < 0) return false;
  byte = static_cast<uint8_t>(hi * 16 + lo);
  return true;
}

class ByteFallback final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (utf8_is_valid(pending)) {
        out.push_back(pending);
      } else {
        for (size_t i = 0; i < pending.size(); ++i) out.emplace_back(kReplacementChar);
      }
      pending.clear();
    };
    for (std::string& t : tokens) {
      uint8_t b = 0;
      if (byte_token(t, b)) {
        pending.push_back(static_cast<char>(b));
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens = std::move(out);
  }
};

class Fuse final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class Strip final : public Decoder {
 public:
  Strip(uint32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      std::vector<size_t> starts;  // byte offset of each character
      std::vector<uint32_t> chars;
      for (size_t i = 0; i < t.size();) {
        starts.push_back(i);
        chars.push_back(utf8_next(t, i));
      }
      starts.push_back(t.size());
      size_t start_cut = 0;
      for (size_t i = 0; i < start_ && i < chars.size() && chars[i] == content_; ++i) start_cut = i + 1;
      size_t stop_cut = chars.size();
      for (size_t i = 0; i < stop_ && i < chars.size(); ++i) {
        const size_t index = chars.size() - i - 1;
        if (chars[index] != content_) break;
        stop_cut = index;
      }
      t = stop_cut > start_cut ? t.substr(starts[start_cut], starts[stop_cut] - starts[start_cut]) : std::string();
    }
  }

 private:
  uint32_t content_;
  size_t start_, stop_;
};

class Replace final : public Decoder {
 public:
  Replace(std::shared_ptr<const Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      std::string out;
      size_t last = 0;
      pattern_->find_all(t, [&](size_t b, size_t e) {
        out.append(t, last, b - last);
        out += content_;
        last = e;
      });
      out.append(t, last, std::string::npos);
      t = std::move(out);
    }
  }

 private:
  std::shared_ptr<const Regex> pattern_;
  std::string content_;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& s : steps_) s->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

Result<std::unique_ptr<Decoder>> make_metaspace(const nlohmann::json& spec) {
  std::string replacement = spec.value("replacement", std::string("\xe2\x96\x81"));
  bool strip_first = spec.value("add_prefix_space", true);
  if (spec.contains("prepend_scheme")) strip_first = spec["prepend_scheme"].get<std::string>() != "never";
  return std::unique_ptr<Decoder>(new Metaspace(std::move(replacement), strip_first));
}

Result<std::unique_ptr<Decoder>> make_strip(const nlohmann::json& spec) {
  const std::string content = spec.value("content", std::string(" "));
  size_t i = 0;
  if (content.empty()) return invalid_argument("Strip decoder: empty content");
  const uint32_t cp = utf8_next(content, i);
  return std::unique_ptr<Decoder>(new Strip(cp, spec.value("start", size_t{0}), spec.value("stop", size_t{0})));
}

}  // namespace

Result<std::unique_ptr<Decoder>> make_decoder(const nlohmann::json& spec) {
  if (spec.is_null()) return std::unique_ptr<Decoder>();
  const std::string type = spec.value("type", "");
  if (type == "ByteLevel") return std::unique_ptr<Decoder>(new ByteLevel());
  if (type == "Metaspace") return make_metaspace(spec);
  if (type == "ByteFallback") return std::unique_ptr<Decoder>(new ByteFallback());
  if (type == "Fuse") return std::unique_ptr<Decoder>(new Fuse());
  if (type == "Strip") return make_strip(spec);
  if (type == "Replace") {
    FT_ASSIGN_OR_RETURN(auto pattern, make_pattern(spec.at("pattern"), "Replace decoder"));
    return std::unique_ptr<Decoder>(new Replace(std::move(pattern), spec.at("content").get<std::string>()));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> steps;
    for (const auto& s : spec.at("decoders")) {
      FT_ASSIGN_OR_RETURN(auto step, make_decoder(s));
      if (step) steps.push_back(std::move(step));
    }
    return std::unique_ptr<Decoder>(new Sequence(std::move(steps)));
  }
  return unsupported("unsupported decoder type '" + type + "'");
}

}  // namespace ft::tok
