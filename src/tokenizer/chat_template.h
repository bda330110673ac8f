// Chat templates: a model's Jinja chat template rendered the way transformers' apply_chat_template does.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "freetoken/status.h"

namespace ft::tok {

namespace jinja {
struct Stmt;
}

class ChatTemplate {
 public:
  // Parses a template; a syntax error or unsupported construct is kInvalidArgument naming the template line.
  static Result<ChatTemplate> parse(std::string source);

  // Renders with `context` as the template variables (messages, tools, add_generation_prompt, bos_token,
  // eos_token, enable_thinking, ...), exactly as given: nothing is added or normalised here.
  // ordered_json, because key order reaches the output through `tojson` (tool schemas, arguments).
  // raise_exception() in the template and runtime errors come back as kInvalidArgument with the line.
  Result<std::string> render(const nlohmann::ordered_json& context) const;

  // Whether the template tells a null `content` apart from "" (it tests content against none), and whether
  // it reads content-part arrays itself (it iterates content or tests it with `is string` / `is iterable`).
  bool distinguishes_null_content() const { return null_content_; }
  bool reads_content_parts() const { return content_parts_; }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const std::vector<std::shared_ptr<const jinja::Stmt>>> body_;
  bool null_content_ = false;
  bool content_parts_ = false;
};

// OpenAI-shaped messages -> what the template is given (what a transformers user would pass):
//  - `content: null` stays null when the template distinguishes it (DeepSeek tests `content is not none`),
//    and becomes "" otherwise (Qwen3 would fail on `'</think>' in None`, GLM would print "None");
//  - a content-part array stays an array when the template reads parts itself (Qwen3.5/3.6, GLM-4.x);
//    otherwise its text parts are joined with "\n" (as vLLM's "string" content format does), and any
//    non-text part is kInvalidRequest;
//  - everything else (tool_calls with arguments as objects or JSON strings, reasoning_content, name, ...)
//    is passed through unchanged.
Result<nlohmann::ordered_json> normalize_messages(const nlohmann::ordered_json& messages, const ChatTemplate& tmpl);

// A tokenizer directory's chat template and special-token strings.
struct TokenizerChatConfig {
  ChatTemplate chat_template;
  nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();  // bos_token, eos_token, ... (set ones)
};

// Reads DIR/chat_template.jinja if present, else tokenizer_config.json's chat_template (a string, or a list
// of {name, template} where "default" is preferred); special tokens come from tokenizer_config.json
// (plain strings or {"content": ...} objects).
Result<TokenizerChatConfig> load_chat_config(const std::string& dir);

// The variables transformers' apply_chat_template renders with: messages (normalised), tools (null when
// absent), documents: null, add_generation_prompt (false when absent), the special tokens, then every
// other key of `request` (chat-template kwargs such as enable_thinking, reasoning_effort, builtin_tools).
Result<nlohmann::ordered_json> make_render_context(const TokenizerChatConfig& config,
                                                   const nlohmann::ordered_json& request);

}  // namespace ft::tok
