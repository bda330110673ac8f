// OpenAI request parsing.
#include "server/openai_request.h"

#include <algorithm>

#include "server/chat_prompt.h"

namespace ft::server {

void parse_openai_sampling(const Json& b, GenerateRequest& r) {
  SamplingParams& s = r.sampling;
  if (auto v = opt_number(b, "temperature", 0, 2)) s.temperature = static_cast<float>(*v);
  if (auto v = opt_number(b, "top_p", 0, 1)) {
    if (*v <= 0) throw_bad_request("'top_p' must be in (0, 1]", "top_p");
    s.top_p = static_cast<float>(*v);
  }
  if (auto v = opt_integer(b, "top_k", -1, 1 << 30)) s.top_k = static_cast<int32_t>(std::max<int64_t>(0, *v));
  if (auto v = opt_number(b, "min_p", 0, 1)) s.min_p = static_cast<float>(*v);
  if (auto v = opt_number(b, "repetition_penalty", 0, 100)) {
    if (*v <= 0) throw_bad_request("'repetition_penalty' must be > 0", "repetition_penalty");
    s.repetition_penalty = static_cast<float>(*v);
  }
  if (auto v = opt_number(b, "presence_penalty", -2, 2)) s.presence_penalty = static_cast<float>(*v);
  if (auto v = opt_number(b, "frequency_penalty", -2, 2)) s.frequency_penalty = static_cast<float>(*v);
  if (const Json* seed = field(b, "seed")) {
    if (!seed->is_number_integer()) throw_bad_request("'seed' must be an integer", "seed");
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  }
  if (auto v = opt_integer(b, "n", 1, kMaxChoices)) r.n = static_cast<int32_t>(*v);
  if (auto v = opt_bool(b, "ignore_eos")) r.ignore_eos = *v;
  if (const Json* bias = field(b, "logit_bias")) {
    if (!bias->is_object()) throw_bad_request("'logit_bias' must be an object", "logit_bias");
    if (!bias->empty()) throw_bad_request("'logit_bias' is not supported", "logit_bias");
  }
}

std::vector<std::string> parse_stop_strings(const Json& b, const char* key) {
  std::vector<std::string> out;
  const Json* stop = field(b, key);
  if (!stop) return out;
  if (stop->is_string()) {
    out.push_back(stop->get<std::string>());
  } else if (stop->is_array()) {
    if (stop->size() > 16) throw_bad_request(std::string("'") + key + "' holds at most 16 strings", key);
    for (const auto& s : *stop) {
      if (!s.is_string()) throw_bad_request(std::string("'") + key + "' must hold strings", key);
      out.push_back(s.get<std::string>());
    }
  } else {
    throw_bad_request(std::string("'") + key + "' must be a string or an array of strings", key);
  }
  for (const auto& s : out)
    if (s.empty()) throw_bad_request(std::string("'") + key + "' must not hold empty strings", key);
  return out;
}

int32_t parse_max_tokens(const ServerState& state, const Json& b, std::initializer_list<const char*> keys,
                         size_t prompt_tokens) {
  for (const char* key : keys)
    if (auto v = opt_integer(b, key, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())) {
      if (*v < 1) throw_bad_request(std::string("'") + key + "' must be at least 1", key);
      return static_cast<int32_t>(std::min<int64_t>(*v, 1 << 30));
    }
  const int64_t left = static_cast<int64_t>(state.engine().context_length()) - static_cast<int64_t>(prompt_tokens);
  return static_cast<int32_t>(std::max<int64_t>(1, std::min<int64_t>(left, state.options().max_output_tokens)));
}

namespace {

void parse_stream_flags(const Json& b, OpenAIJob& job) {
  job.stream = opt_bool(b, "stream").value_or(false);
  if (const Json* so = field(b, "stream_options")) {
    if (!so->is_object()) throw_bad_request("'stream_options' must be an object", "stream_options");
    if (!job.stream) throw_bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options");
    job.include_usage = opt_bool(*so, "include_usage").value_or(false);
  }
}

ToolChoice parse_tool_choice(const Json& b, const Json& tools, std::string& name) {
  const Json* tc = field(b, "tool_choice");
  if (!tc) return ToolChoice::kAuto;
  if (tc->is_string()) {
    const std::string v = tc->get<std::string>();
    if (v == "auto") return ToolChoice::kAuto;
    if (v == "none") return ToolChoice::kNone;
    if (v == "required") {
      if (!tools.is_array() || tools.empty()) throw_bad_request("tool_choice 'required' needs tools", "tool_choice");
      return ToolChoice::kRequired;
    }
    throw_bad_request("'tool_choice' must be none, auto, required or a named function", "tool_choice");
  }
  if (!tc->is_object()) throw_bad_request("'tool_choice' must be a string or an object", "tool_choice");
  const Json* fn = field(*tc, "function");
  name = fn && fn->is_object() ? opt_string(*fn, "name").value_or("") : opt_string(*tc, "name").value_or("");
  if (name.empty()) throw_bad_request("'tool_choice' names no function", "tool_choice");
  bool found = false;
  if (tools.is_array())
    for (const auto& t : tools) {
      const Json& f = t.contains("function") ? t["function"] : t;
      found = found || (f.contains("name") && f["name"] == name);
    }
  if (!found) throw_bad_request("tool_choice names '" + name + "', which is not among the tools", "tool_choice");
  return ToolChoice::kNamed;
}

Json template_kwargs(const Json& b) {
  Json kw = Json::object();
  if (const Json* k = field(b, "chat_template_kwargs")) {
    if (!k->is_object()) throw_bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    kw = *k;
  }
  if (auto v = opt_bool(b, "enable_thinking")) kw["enable_thinking"] = *v;
  if (const Json* e = field(kw, "enable_thinking"); e && !e->is_boolean())
    throw_bad_request("'enable_thinking' must be a boolean", "chat_template_kwargs");
  return kw;
}

void check_response_format(const Json& b, const Json& messages) {
  const Json* rf = field(b, "response_format");
  if (!rf) return;
  if (!rf->is_object()) throw_bad_request("'response_format' must be an object", "response_format");
  const std::string type = require_string(*rf, "type");
  if (type == "text") return;
  if (type == "json_object") {
    // OpenAI's own rule: the conversation must ask for JSON.
    std::string all = messages.dump();
    std::transform(all.begin(), all.end(), all.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (all.find("json") == std::string::npos)
      throw_bad_request("'messages' must contain the word 'json' in some form to use response_format json_object",
                        "response_format");
    return;
  }
  if (type == "json_schema")
    throw_bad_request("response_format json_schema is not supported (no constrained decoding)", "response_format");
  throw_bad_request("unknown response_format type '" + type + "'", "response_format");
}

void finish_chat_job(const ServerState& state, const Json& b, const ChatInput& in, OpenAIJob& job,
                     std::initializer_list<const char*> max_keys) {
  ChatPrompt prompt = build_chat_prompt(state, in);
  job.spec.request.prompt = std::move(prompt.ids);
  job.spec.parse = prompt.parse;
  job.spec.request.max_tokens = parse_max_tokens(state, b, max_keys, job.spec.request.prompt.size());
}

// What chat and text completions read alike: the model, the stream flags, sampling and stop strings.
OpenAIJob parse_common_fields(const ServerState& state, const Json& b, const char* endpoint) {
  OpenAIJob job;
  job.spec.endpoint = endpoint;
  job.spec.model = opt_string(b, "model").value_or(state.model_name());
  parse_stream_flags(b, job);
  job.spec.stream = job.stream;
  parse_openai_sampling(b, job.spec.request);
  job.spec.stop_strings = parse_stop_strings(b, "stop");
  return job;
}

}  // namespace

OpenAIJob parse_chat_request(const ServerState& state, const Json& b) {
  OpenAIJob job = parse_common_fields(state, b, "chat.completions");
  job.logprobs = opt_bool(b, "logprobs").value_or(false);
  if (auto k = opt_integer(b, "top_logprobs", 0, kMaxLogprobs)) {
    if (!job.logprobs) throw_bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    job.spec.request.sampling.logprobs = static_cast<int32_t>(*k);
  } else if (job.logprobs) {
    job.spec.request.sampling.logprobs = 0;
  }
  ChatInput in;
  in.messages = validate_openai_messages(state, require_field(b, "messages"));
  if (const Json* tools = field(b, "tools")) {
    validate_openai_tools(*tools);
    in.tools = *tools;
  }
  in.tool_choice = parse_tool_choice(b, in.tools, in.tool_name);
  opt_bool(b, "parallel_tool_calls");
  in.template_kwargs = template_kwargs(b);
  check_response_format(b, in.messages);
  finish_chat_job(state, b, in, job, {"max_completion_tokens", "max_tokens"});
  return job;
}

std::vector<OpenAIJob> parse_completion_request(const ServerState& state, const Json& b) {
  OpenAIJob base = parse_common_fields(state, b, "completions");
  if (auto k = opt_integer(b, "logprobs", 0, kMaxLogprobs)) {
    base.logprobs = true;
    base.spec.request.sampling.logprobs = static_cast<int32_t>(*k);
  }
  if (opt_bool(b, "echo").value_or(false)) throw_bad_request("'echo' is not supported", "echo");
  if (auto s = opt_string(b, "suffix"); s && !s->empty()) throw_bad_request("'suffix' is not supported", "suffix");
  if (auto bo = opt_integer(b, "best_of", 1, kMaxChoices); bo && *bo != base.spec.request.n)
    throw_bad_request("'best_of' other than n is not supported", "best_of");

  const Json& prompt = require_field(b, "prompt");
  std::vector<std::vector<int32_t>> prompts;
  auto token_array = [&](const Json& a) {
    std::vector<int32_t> ids;
    for (const auto& t : a) {
      if (!t.is_number_integer()) throw_bad_request("a token prompt must hold integers", "prompt");
      const int64_t id = t.get<int64_t>();
      if (id < 0 || id >= state.engine().vocab_size())
        throw_bad_request("prompt token id " + std::to_string(id) + " is out of range", "prompt");
      ids.push_back(static_cast<int32_t>(id));
    }
    return ids;
  };
  if (prompt.is_string()) {
    prompts.push_back(state.tokenizer().encode(prompt.get<std::string>(), true));
  } else if (prompt.is_array() && !prompt.empty() && prompt[0].is_number()) {
    prompts.push_back(token_array(prompt));
  } else if (prompt.is_array() && !prompt.empty()) {
    if (prompt.size() > 64) throw_bad_request("at most 64 prompts per request", "prompt");
    for (const auto& p : prompt) {
      if (p.is_string()) prompts.push_back(state.tokenizer().encode(p.get<std::string>(), true));
      else if (p.is_array()) prompts.push_back(token_array(p));
      else throw_bad_request("'prompt' must be a string, an array of strings or of token arrays", "prompt");
    }
  } else {
    throw_bad_request("'prompt' must be a non-empty string, token array, or array of them", "prompt");
  }
  std::vector<OpenAIJob> jobs;
  for (auto& ids : prompts) {
    if (ids.empty()) throw_bad_request("a prompt is empty", "prompt");
    OpenAIJob job = base;
    job.spec.request.prompt = std::move(ids);
    job.spec.request.max_tokens = parse_max_tokens(state, b, {"max_tokens"}, job.spec.request.prompt.size());
    job.spec.parse = {};
    jobs.push_back(std::move(job));
  }
  return jobs;
}

namespace {

// Responses input content: a string, or parts of type input_text / output_text / input_image.
Json responses_content(const ServerState& state, const Json& content, const std::string& at) {
  if (content.is_string()) return content;
  if (!content.is_array()) throw_bad_request(at + ".content must be a string or an array", at);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& p = content[i];
    const std::string pat = at + ".content[" + std::to_string(i) + "]";
    if (!p.is_object()) throw_bad_request(pat + " must be an object", pat);
    const std::string type = require_string(p, "type");
    if (type == "input_text" || type == "output_text" || type == "text") {
      if (!text.empty()) text += "\n";
      text += require_string(p, "text");
    } else if (type == "input_image") {
      refuse_image(state, opt_string(p, "image_url").value_or(""), pat);
    } else {
      throw_bad_request(pat + ": content type '" + type + "' is not supported", pat);
    }
  }
  return text;
}

}  // namespace

OpenAIJob parse_responses_request(const ServerState& state, const Json& b) {
  OpenAIJob job;
  job.spec.endpoint = "responses";
  job.spec.model = opt_string(b, "model").value_or(state.model_name());
  job.stream = opt_bool(b, "stream").value_or(false);
  job.spec.stream = job.stream;
  if (auto v = opt_number(b, "temperature", 0, 2)) job.spec.request.sampling.temperature = static_cast<float>(*v);
  if (auto v = opt_number(b, "top_p", 0, 1)) {
    if (*v <= 0) throw_bad_request("'top_p' must be in (0, 1]", "top_p");
    job.spec.request.sampling.top_p = static_cast<float>(*v);
  }
  if (field(b, "previous_response_id"))
    throw_bad_request("this server is stateless: 'previous_response_id' is not supported", "previous_response_id");
  Json messages = Json::array();
  if (auto ins = opt_string(b, "instructions")) messages.push_back({{"role", "system"}, {"content", *ins}});
  const Json& input = require_field(b, "input");
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
  } else if (input.is_array() && !input.empty()) {
    for (size_t i = 0; i < input.size(); ++i) {
      const Json& item = input[i];
      const std::string at = "input[" + std::to_string(i) + "]";
      if (!item.is_object()) throw_bad_request(at + " must be an object", at);
      const std::string type = opt_string(item, "type").value_or("message");
      if (type == "message") {
        const std::string role = require_string(item, "role");
        if (role != "user" && role != "assistant" && role != "system" && role != "developer")
          throw_bad_request(at + ": unknown role '" + role + "'", at);
        messages.push_back({{"role", role == "developer" ? "system" : role},
                            {"content", responses_content(state, require_field(item, "content"), at)}});
      } else if (type == "function_call") {
        Json call = {{"id", require_string(item, "call_id")},
                     {"type", "function"},
                     {"function", {{"name", require_string(item, "name")}, {"arguments", require_string(item, "arguments")}}}};
        if (!messages.empty() && messages.back()["role"] == "assistant" && messages.back().contains("tool_calls"))
          messages.back()["tool_calls"].push_back(call);
        else
          messages.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({call})}});
      } else if (type == "function_call_output") {
        const Json& output = require_field(item, "output");
        messages.push_back({{"role", "tool"},
                            {"tool_call_id", require_string(item, "call_id")},
                            {"content", output.is_string() ? output.get<std::string>() : output.dump()}});
      } else {
        throw_bad_request(at + ": input item type '" + type + "' is not supported", at);
      }
    }
  } else {
    throw_bad_request("'input' must be a string or a non-empty array", "input");
  }
  ChatInput in;
  in.messages = validate_openai_messages(state, messages);
  if (const Json* tools = field(b, "tools")) {
    if (!tools->is_array()) throw_bad_request("'tools' must be an array", "tools");
    Json converted = Json::array();
    for (const auto& t : *tools) {
      if (!t.is_object() || opt_string(t, "type").value_or("") != "function")
        throw_bad_request("only tools of type 'function' are supported", "tools");
      Json fn = {{"name", require_string(t, "name")}};
      if (auto d = opt_string(t, "description")) fn["description"] = *d;
      if (const Json* p = field(t, "parameters")) fn["parameters"] = *p;
      converted.push_back({{"type", "function"}, {"function", fn}});
    }
    validate_openai_tools(converted);
    in.tools = converted;
  }
  in.tool_choice = parse_tool_choice(b, in.tools, in.tool_name);
  if (const Json* r = field(b, "reasoning"); r && r->is_object() && field(*r, "effort"))
    in.template_kwargs["reasoning_effort"] = (*r)["effort"];
  finish_chat_job(state, b, in, job, {"max_output_tokens"});
  return job;
}

}  // namespace ft::server
