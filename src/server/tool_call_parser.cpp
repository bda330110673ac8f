// ToolCallParser implementation.
#include "server/tool_call_parser.h"

#include <nlohmann/json.hpp>

#include "server/tag_scan.h"

namespace ft::server {
namespace {
constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
}  // namespace

bool parse_tool_call_body(std::string_view body, ToolCall& call) {
  const auto j = nlohmann::ordered_json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) return false;
  call.name = name->get<std::string>();
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  if (args == j.end() || args->is_null())
    call.arguments = "{}";
  else if (args->is_string())
    call.arguments = args->get<std::string>();
  else
    call.arguments = args->dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return true;
}

ToolCallParser::ToolCallParser(ToolCallOptions options) : options_(std::move(options)) {
  if (options_.enabled && options_.forced) {
    inside_ = true;
    buf_ = options_.forced_body;
  }
}

bool ToolCallParser::take_block(const std::string& body, std::vector<ToolCall>& calls) {
  ToolCall call;
  if (!parse_tool_call_body(body, call)) return false;
  calls.push_back(std::move(call));
  ++n_calls_;
  return true;
}

void ToolCallParser::push(std::string_view text, std::string& content, std::vector<ToolCall>& calls) {
  if (!options_.enabled) {
    content.append(text);
    return;
  }
  buf_.append(text);
  for (;;) {
    if (inside_) {
      const size_t at = buf_.find(kClose);
      if (at == std::string::npos) return;
      const std::string body = buf_.substr(0, at);
      if (!take_block(body, calls)) content.append(kOpen).append(body).append(kClose);
      buf_.erase(0, at + kClose.size());
      inside_ = false;
      continue;
    }
    const size_t at = buf_.find(kOpen);
    if (at != std::string::npos) {
      size_t end = at;  // the whitespace a template puts before a call is not content
      while (end > 0 && is_space(buf_[end - 1])) --end;
      content.append(buf_, 0, end);
      buf_.erase(0, at + kOpen.size());
      inside_ = true;
      continue;
    }
    size_t keep = buf_.size() - partial_tag_suffix(buf_, kOpen);
    while (keep > 0 && is_space(buf_[keep - 1])) --keep;  // hold trailing whitespace
    content.append(buf_, 0, keep);
    buf_.erase(0, keep);
    return;
  }
}

void ToolCallParser::finish(std::string& content, std::vector<ToolCall>& calls) {
  if (!options_.enabled) return;
  if (inside_) {
    if (!take_block(buf_, calls)) {
      if (options_.forced && !options_.forced_name.empty()) {
        // A named call cut short (max_tokens): the name is known, the arguments are what was generated.
        constexpr std::string_view kArgs = "\"arguments\": ";
        const size_t at = buf_.find(kArgs);
        std::string args = at == std::string::npos ? std::string() : buf_.substr(at + kArgs.size());
        calls.push_back({options_.forced_name, std::move(args)});
        ++n_calls_;
      } else {
        content.append(kOpen).append(buf_);
      }
    }
  } else {
    bool blank = true;
    for (char c : buf_) blank = blank && is_space(c);
    if (!(blank && n_calls_ > 0)) content += buf_;
  }
  buf_.clear();
  inside_ = false;
}

}  // namespace ft::server
