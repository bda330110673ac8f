// Anthropic request parsing.
#include "server/anthropic_request.h"

#include "server/openai_request.h"

namespace ft::server {
namespace {

std::string text_of_blocks(const Json& content, const std::string& at) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw_bad_request(at + " must be a string or an array of blocks", at);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& b = content[i];
    const std::string bat = at + "[" + std::to_string(i) + "]";
    if (!b.is_object() || require_string(b, "type") != "text") throw_bad_request(bat + " must be a text block", bat);
    if (!text.empty()) text += "\n";
    text += require_string(b, "text");
  }
  return text;
}

std::string image_url_of(const Json& block, const std::string& at) {
  const Json* src = field(block, "source");
  if (!src || !src->is_object()) throw_bad_request(at + ".source must be an object", at);
  const std::string type = require_string(*src, "type");
  if (type == "base64")
    return "data:" + require_string(*src, "media_type") + ";base64," + require_string(*src, "data");
  if (type == "url") return require_string(*src, "url");
  throw_bad_request(at + ": image source type '" + type + "' is not supported", at);
}

// One Anthropic message -> one or more OpenAI messages (tool results become "tool" messages first).
void convert_message(const ServerState& state, const Json& m, const std::string& at, Json& out) {
  if (!m.is_object()) throw_bad_request(at + " must be an object", at);
  const Json* role_v = field(m, "role");
  if (!role_v || !role_v->is_string()) throw_bad_request(at + ".role must be a string", at);
  const std::string role = role_v->get<std::string>();
  if (role != "user" && role != "assistant") throw_bad_request(at + ": unknown role '" + role + "'", at);
  const Json& content = require_field(m, "content");
  if (content.is_string()) {
    out.push_back({{"role", role}, {"content", content}});
    return;
  }
  if (!content.is_array()) throw_bad_request(at + ".content must be a string or an array of blocks", at);
  std::string text, reasoning;
  Json calls = Json::array();
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& b = content[i];
    const std::string bat = at + ".content[" + std::to_string(i) + "]";
    if (!b.is_object()) throw_bad_request(bat + " must be an object", bat);
    const std::string type = require_string(b, "type");
    if (type == "text") {
      if (!text.empty()) text += "\n";
      text += require_string(b, "text");
    } else if (type == "image") {
      refuse_image(state, image_url_of(b, bat), bat);
    } else if (type == "tool_use" && role == "assistant") {
      const Json& input = require_field(b, "input");
      if (!input.is_object()) throw_bad_request(bat + ".input must be an object", bat);
      calls.push_back({{"id", require_string(b, "id")},
                       {"type", "function"},
                       {"function", {{"name", require_string(b, "name")}, {"arguments", input}}}});
    } else if (type == "tool_result" && role == "user") {
      const Json* c = field(b, "content");
      std::string result = c ? text_of_blocks(*c, bat + ".content") : "";
      if (opt_bool(b, "is_error").value_or(false)) result = "Error: " + result;
      out.push_back({{"role", "tool"}, {"tool_call_id", require_string(b, "tool_use_id")}, {"content", result}});
    } else if ((type == "thinking" || type == "redacted_thinking") && role == "assistant") {
      if (type == "thinking") reasoning += opt_string(b, "thinking").value_or("");
    } else {
      throw_bad_request(bat + ": block type '" + type + "' is not supported in a " + role + " message", bat);
    }
  }
  if (role == "user" && text.empty() && !out.empty() && out.back()["role"] == "tool") return;
  Json msg = {{"role", role}, {"content", text}};
  if (!reasoning.empty()) msg["reasoning_content"] = reasoning;
  if (!calls.empty()) msg["tool_calls"] = calls;
  out.push_back(std::move(msg));
}

}  // namespace

ChatInput anthropic_chat_input(const ServerState& state, const Json& b) {
  ChatInput in;
  if (const Json* sys = field(b, "system")) in.messages.push_back({{"role", "system"}, {"content", text_of_blocks(*sys, "system")}});
  const Json& messages = require_field(b, "messages");
  if (!messages.is_array()) throw_bad_request("'messages' must be an array");
  if (messages.empty()) throw_bad_request("'messages' must not be empty");
  for (size_t i = 0; i < messages.size(); ++i)
    convert_message(state, messages[i], "messages[" + std::to_string(i) + "]", in.messages);
  if (const Json* tools = field(b, "tools")) {
    if (!tools->is_array()) throw_bad_request("'tools' must be an array");
    in.tools = Json::array();
    for (size_t i = 0; i < tools->size(); ++i) {
      const Json& t = (*tools)[i];
      const std::string at = "tools[" + std::to_string(i) + "]";
      if (!t.is_object()) throw_bad_request(at + " must be an object");
      if (auto type = opt_string(t, "type"); type && *type != "custom")
        throw_bad_request(at + ": server tool type '" + *type + "' is not supported");
      Json fn = {{"name", require_string(t, "name")}};
      if (auto d = opt_string(t, "description")) fn["description"] = *d;
      const Json& schema = require_field(t, "input_schema");
      if (!schema.is_object()) throw_bad_request(at + ".input_schema must be an object");
      fn["parameters"] = schema;
      in.tools.push_back({{"type", "function"}, {"function", fn}});
    }
    validate_openai_tools(in.tools);
  }
  if (const Json* tc = field(b, "tool_choice")) {
    if (!tc->is_object()) throw_bad_request("'tool_choice' must be an object");
    const std::string type = require_string(*tc, "type");
    const bool has_tools = in.tools.is_array() && !in.tools.empty();
    if (type == "auto") in.tool_choice = ToolChoice::kAuto;
    else if (type == "none") in.tool_choice = ToolChoice::kNone;
    else if (type == "any" && has_tools) in.tool_choice = ToolChoice::kRequired;
    else if (type == "tool" && has_tools) {
      in.tool_choice = ToolChoice::kNamed;
      in.tool_name = require_string(*tc, "name");
      bool found = false;
      for (const auto& t : in.tools) found = found || t["function"]["name"] == in.tool_name;
      if (!found) throw_bad_request("tool_choice names '" + in.tool_name + "', which is not among the tools");
    } else {
      throw_bad_request("'tool_choice' type '" + type + "' is not valid here");
    }
  }
  bool thinking = false;
  if (const Json* th = field(b, "thinking")) {
    if (!th->is_object()) throw_bad_request("'thinking' must be an object");
    const std::string type = require_string(*th, "type");
    if (type == "enabled") {
      thinking = true;
      if (auto budget = opt_integer(*th, "budget_tokens", 0, 1 << 30); budget && *budget < 1)
        throw_bad_request("'thinking.budget_tokens' must be at least 1");
    } else if (type != "disabled") {
      throw_bad_request("'thinking.type' must be 'enabled' or 'disabled'");
    }
  }
  in.template_kwargs["enable_thinking"] = thinking;
  return in;
}

AnthropicJob parse_messages_request(const ServerState& state, const Json& b) {
  AnthropicJob job;
  job.spec.endpoint = "messages";
  job.spec.model = opt_string(b, "model").value_or(state.model_name());
  job.stream = opt_bool(b, "stream").value_or(false);
  job.spec.stream = job.stream;
  GenerateRequest& r = job.spec.request;
  if (!field(b, "max_tokens")) throw_bad_request("'max_tokens' is required");
  if (auto v = opt_number(b, "temperature", 0, 1)) r.sampling.temperature = static_cast<float>(*v);
  if (auto v = opt_number(b, "top_p", 0, 1)) {
    if (*v <= 0) throw_bad_request("'top_p' must be in (0, 1]");
    r.sampling.top_p = static_cast<float>(*v);
  }
  if (auto v = opt_integer(b, "top_k", 0, 1 << 30)) r.sampling.top_k = static_cast<int32_t>(*v);
  if (auto v = opt_bool(b, "ignore_eos")) r.ignore_eos = *v;  // extension, as on the OpenAI routes
  if (const Json* stops = field(b, "stop_sequences"); stops && !stops->is_array())
    throw_bad_request("'stop_sequences' must be an array of strings");
  job.spec.stop_strings = parse_stop_strings(b, "stop_sequences");
  if (const Json* md = field(b, "metadata"); md && !md->is_object()) throw_bad_request("'metadata' must be an object");
  const ChatInput in = anthropic_chat_input(state, b);
  job.thinking = in.template_kwargs["enable_thinking"].get<bool>();
  ChatPrompt prompt = build_chat_prompt(state, in);
  r.prompt = std::move(prompt.ids);
  job.spec.parse = prompt.parse;
  r.max_tokens = parse_max_tokens(state, b, {"max_tokens"}, r.prompt.size());
  return job;
}

int32_t count_message_tokens(const ServerState& state, const Json& b) {
  return static_cast<int32_t>(build_chat_prompt(state, anthropic_chat_input(state, b)).ids.size());
}

}  // namespace ft::server
