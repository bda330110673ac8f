// Chat prompt building and OpenAI message validation.
#include "server/chat_prompt.h"

#include <regex>

#include "server/tag_scan.h"

namespace ft::server {

void refuse_image(const ServerState& state, const std::string& url, const std::string& where) {
  const Status st = check_media_url(state.options().media, url);
  if (!st.ok()) throw_bad_request(where + ": " + st.message(), where);
  throw_bad_request(where + ": the served model '" + state.model_name() +
                        "' accepts text only; image input is not supported",
                    where);
}

namespace {

void validate_content_parts(const ServerState& state, const Json& parts, const std::string& where) {
  for (size_t i = 0; i < parts.size(); ++i) {
    const Json& p = parts[i];
    const std::string at = where + ".content[" + std::to_string(i) + "]";
    if (!p.is_object()) throw_bad_request(at + " must be an object", at);
    const std::string type = require_string(p, "type");
    if (type == "text") {
      if (!field(p, "text") || !p["text"].is_string()) throw_bad_request(at + ".text must be a string", at);
    } else if (type == "image_url") {
      const Json* img = field(p, "image_url");
      std::string url;
      if (img && img->is_object() && field(*img, "url") && (*img)["url"].is_string()) url = (*img)["url"];
      else if (img && img->is_string()) url = img->get<std::string>();
      else throw_bad_request(at + ".image_url.url must be a string", at);
      refuse_image(state, url, at);
    } else {
      throw_bad_request(at + ": content part type '" + type + "' is not supported", at);
    }
  }
}

void validate_tool_calls(const Json& calls, const std::string& where) {
  if (!calls.is_array()) throw_bad_request(where + ".tool_calls must be an array", where);
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string at = where + ".tool_calls[" + std::to_string(i) + "]";
    const Json& c = calls[i];
    if (!c.is_object() || !field(c, "function") || !c["function"].is_object())
      throw_bad_request(at + " must be an object with a 'function' object", at);
    require_string(c["function"], "name");
    const Json* args = field(c["function"], "arguments");
    if (args && !args->is_string() && !args->is_object())
      throw_bad_request(at + ".function.arguments must be a JSON string or an object", at);
  }
}

bool ends_with_open_think(const std::string& prompt) {
  const size_t at = prompt.rfind("<think>");
  if (at == std::string::npos) return false;
  for (size_t i = at + 7; i < prompt.size(); ++i)
    if (!is_space(prompt[i])) return false;
  return true;
}

}  // namespace

Json validate_openai_messages(const ServerState& state, const Json& messages) {
  if (!messages.is_array()) throw_bad_request("'messages' must be an array", "messages");
  if (messages.empty()) throw_bad_request("'messages' must not be empty", "messages");
  Json out = Json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    const Json& m = messages[i];
    if (!m.is_object()) throw_bad_request(at + " must be an object", at);
    const Json* role_v = field(m, "role");
    if (!role_v || !role_v->is_string()) throw_bad_request(at + ".role must be a string", at + ".role");
    std::string role = role_v->get<std::string>();
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool")
      throw_bad_request(at + ": unknown role '" + role + "'", at + ".role");
    const Json* content = field(m, "content");
    if (!content) {
      if (role != "assistant") throw_bad_request(at + ".content is required for role '" + role + "'", at);
    } else if (content->is_array()) {
      validate_content_parts(state, *content, at);
    } else if (!content->is_string()) {
      throw_bad_request(at + ".content must be a string or an array of content parts", at + ".content");
    }
    if (const Json* calls = field(m, "tool_calls")) {
      if (role != "assistant") throw_bad_request(at + ": only assistant messages carry tool_calls", at);
      validate_tool_calls(*calls, at);
    }
    Json copy = m;
    if (role == "developer") copy["role"] = "system";
    out.push_back(std::move(copy));
  }
  return out;
}

void validate_openai_tools(const Json& tools) {
  static const std::regex kName("^[a-zA-Z0-9_.:-]{1,128}$");
  if (!tools.is_array()) throw_bad_request("'tools' must be an array", "tools");
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const Json& t = tools[i];
    if (!t.is_object()) throw_bad_request(at + " must be an object", at);
    if (opt_string(t, "type").value_or("function") != "function")
      throw_bad_request(at + ".type must be 'function'", at + ".type");
    const Json* fn = field(t, "function");
    if (!fn || !fn->is_object()) throw_bad_request(at + ".function must be an object", at + ".function");
    const std::string name = require_string(*fn, "name");
    if (!std::regex_match(name, kName)) throw_bad_request(at + ".function.name '" + name + "' is not a valid name", at);
    opt_string(*fn, "description");
    if (const Json* p = field(*fn, "parameters"); p && !p->is_object())
      throw_bad_request(at + ".function.parameters must be an object", at);
  }
}

ChatPrompt build_chat_prompt(const ServerState& state, const ChatInput& in) {
  const tok::TokenizerChatConfig* chat = state.chat();
  if (!chat) throw_bad_request("the served model has no chat template (start the server with --chat-template FILE)");
  const bool has_tools = in.tools.is_array() && !in.tools.empty();
  Json request = Json::object();
  request["messages"] = in.messages;
  if (has_tools) request["tools"] = in.tools;
  request["add_generation_prompt"] = true;
  for (auto it = in.template_kwargs.begin(); it != in.template_kwargs.end(); ++it)
    if (it.key() != "messages" && it.key() != "tools" && it.key() != "add_generation_prompt") request[it.key()] = *it;
  auto context = tok::make_render_context(*chat, request);
  if (!context.ok()) throw_bad_request(context.status().message(), "messages");
  auto rendered = chat->chat_template.render(*context);
  if (!rendered.ok()) throw_bad_request("the chat template refused the conversation: " + rendered.status().message(),
                                        "messages");
  std::string prompt = std::move(rendered).value();

  ChatPrompt out;
  const Json* thinking = field(in.template_kwargs, "enable_thinking");
  const bool thinking_off = thinking && thinking->is_boolean() && !thinking->get<bool>();
  out.parse.reasoning.enabled = state.reasoning_parser() && !thinking_off;
  out.parse.reasoning.start_inside = out.parse.reasoning.enabled && ends_with_open_think(prompt);
  auto& tools = out.parse.tools;
  tools.enabled = state.tool_call_parser() && has_tools && in.tool_choice != ToolChoice::kNone;
  if (tools.enabled && (in.tool_choice == ToolChoice::kRequired || in.tool_choice == ToolChoice::kNamed)) {
    // No constrained decoding: the call is forced by writing its opening into the assistant turn.
    if (out.parse.reasoning.start_inside) prompt += "\n</think>\n\n";
    tools.forced = true;
    tools.forced_body = "\n{\"name\": \"";
    if (in.tool_choice == ToolChoice::kNamed) {
      tools.forced_body += in.tool_name + "\", \"arguments\": ";
      tools.forced_name = in.tool_name;
    }
    prompt += "<tool_call>" + tools.forced_body;
    out.parse.reasoning = {};
  }
  out.ids = state.tokenizer().encode(prompt, false);
  return out;
}

}  // namespace ft::server
