// Chat templates (see chat_template.h): parse, render, normalise OpenAI messages, load from a tokenizer dir.
#include "tokenizer/chat_template.h"

#include <filesystem>

#include "core/mapped_file.h"
#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/parser.h"
#include "tokenizer/jinja/value_json.h"

namespace ft::tok {
namespace {

using jinja::Expr;
using jinja::ExprPtr;
using jinja::Stmt;

// `content`, `x.content` or `x['content']`.
bool is_content(const ExprPtr& e) {
  if (!e) return false;
  if (e->type == Expr::Type::kName || e->type == Expr::Type::kAttr) return e->name == "content";
  return e->type == Expr::Type::kItem && e->args[1]->type == Expr::Type::kLiteral && e->args[1]->literal.is_string() &&
         e->args[1]->literal.str == "content";
}

struct Scan {
  bool null_content = false, content_parts = false;

  void expr(const ExprPtr& e) {
    if (!e) return;
    if (e->type == Expr::Type::kTest && is_content(e->args[0])) {
      if (e->name == "none") null_content = true;
      if (e->name == "string" || e->name == "iterable" || e->name == "sequence") content_parts = true;
    }
    for (const auto& a : e->args) expr(a);
    for (const auto& [k, a] : e->kwargs) expr(a);
  }

  void body(const jinja::Body& b) {
    for (const auto& s : b) {
      expr(s->expr);
      expr(s->cond);
      if (s->type == Stmt::Type::kFor && is_content(s->expr)) content_parts = true;
      for (const auto& [c, sub] : s->branches) {
        expr(c);
        body(sub);
      }
      for (const auto& p : s->params) expr(p.default_value);
      for (const auto& [t, a] : s->assignments) expr(a);
      body(s->body);
      body(s->else_body);
    }
  }
};

Result<std::string> token_string(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return invalid_argument("special token is neither a string nor {\"content\": ...}");
}

}  // namespace

Result<ChatTemplate> ChatTemplate::parse(std::string source) {
  FT_ASSIGN_OR_RETURN(jinja::Body body, jinja::parse_template(source));
  ChatTemplate t;
  Scan scan;
  scan.body(body);
  t.null_content_ = scan.null_content;
  t.content_parts_ = scan.content_parts;
  t.source_ = std::move(source);
  t.body_ = std::make_shared<const jinja::Body>(std::move(body));
  return t;
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& context) const {
  if (!context.is_object()) return invalid_argument("chat template context must be a JSON object");
  jinja::Evaluator evaluator(jinja::from_json(context));
  std::string out;
  FT_RETURN_IF_ERROR(evaluator.render(*body_, out));
  return out;
}

Result<nlohmann::ordered_json> normalize_messages(const nlohmann::ordered_json& messages, const ChatTemplate& tmpl) {
  if (!messages.is_array()) return Status(StatusCode::kInvalidRequest, "'messages' must be an array");
  nlohmann::ordered_json out = messages;
  for (auto& m : out) {
    if (!m.is_object()) return Status(StatusCode::kInvalidRequest, "each message must be an object");
    if (!m.contains("content")) continue;
    auto& content = m["content"];
    if (content.is_null()) {
      if (!tmpl.distinguishes_null_content()) content = "";
    } else if (content.is_array() && !tmpl.reads_content_parts()) {
      std::string text;
      for (size_t i = 0; i < content.size(); ++i) {
        const auto& part = content[i];
        std::string type = part.is_object() && part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
        if (type != "text" || !part.contains("text") || !part["text"].is_string())
          return Status(StatusCode::kInvalidRequest,
                        "content part of type '" + type + "' is not supported by this model's chat template");
        if (i) text += '\n';
        text += part["text"].get_ref<const std::string&>();
      }
      content = text;
    }
  }
  return out;
}

Result<TokenizerChatConfig> load_chat_config(const std::string& dir) {
  namespace fs = std::filesystem;
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  const std::string config_path = (fs::path(dir) / "tokenizer_config.json").string();
  if (fs::exists(config_path)) {
    FT_ASSIGN_OR_RETURN(std::string text, read_text_file(config_path));
    config = nlohmann::ordered_json::parse(text, nullptr, false);
    if (config.is_discarded() || !config.is_object()) return corrupt_file(config_path + ": not a JSON object");
  }
  std::string source;
  const std::string jinja_path = (fs::path(dir) / "chat_template.jinja").string();
  if (fs::exists(jinja_path)) {
    FT_ASSIGN_OR_RETURN(source, read_text_file(jinja_path));
  } else if (config.contains("chat_template") && config["chat_template"].is_string()) {
    source = config["chat_template"].get<std::string>();
  } else if (config.contains("chat_template") && config["chat_template"].is_array()) {
    for (const auto& t : config["chat_template"])
      if (t.is_object() && t.value("name", "") == "default" && t.contains("template") && t["template"].is_string())
        source = t["template"].get<std::string>();
    if (source.empty()) return not_found(config_path + ": chat_template list has no \"default\" entry");
  } else {
    return not_found(dir + ": no chat_template.jinja and no chat_template in tokenizer_config.json");
  }
  auto parsed = ChatTemplate::parse(std::move(source));
  if (!parsed.ok()) return Status(parsed.status().code(), dir + " chat template: " + parsed.status().message());
  TokenizerChatConfig out{std::move(parsed).value(), nlohmann::ordered_json::object()};
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    if (!config.contains(key) || config[key].is_null()) continue;
    FT_ASSIGN_OR_RETURN(std::string tok, token_string(config[key]));
    out.special_tokens[key] = tok;
  }
  return out;
}

Result<nlohmann::ordered_json> make_render_context(const TokenizerChatConfig& config,
                                                   const nlohmann::ordered_json& request) {
  if (!request.is_object() || !request.contains("messages"))
    return Status(StatusCode::kInvalidRequest, "the request must be an object with 'messages'");
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  FT_ASSIGN_OR_RETURN(ctx["messages"], normalize_messages(request["messages"], config.chat_template));
  ctx["tools"] = request.contains("tools") ? request["tools"] : nlohmann::ordered_json();
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = request.value("add_generation_prompt", false);
  for (const auto& [k, v] : config.special_tokens.items()) ctx[k] = v;
  for (const auto& [k, v] : request.items())
    if (k != "messages" && k != "tools" && k != "add_generation_prompt") ctx[k] = v;
  return ctx;
}

}  // namespace ft::tok
