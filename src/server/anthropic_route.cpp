// POST /v1/messages (message bodies and the event stream) and POST /v1/messages/count_tokens.
#include <memory>

#include "server/anthropic_request.h"
#include "server/generation.h"
#include "server/http_util.h"
#include "server/routes.h"

namespace ft::server {
namespace {

std::string stop_reason(const ChoiceDelta& d) {
  if (d.finish_reason == "tool_calls") return "tool_use";
  if (d.finish_reason == "length") return "max_tokens";
  return d.stop_sequence.empty() ? "end_turn" : "stop_sequence";
}

Json tool_input(const std::string& arguments) {
  Json input = Json::parse(arguments, nullptr, false);
  return input.is_object() ? input : Json::object();
}

void respond_whole(httplib::Response& res, std::shared_ptr<Generation> gen, AnthropicJob job) {
  respond_later(res, "application/json", [gen, job](SseWriter& w) {
    std::string thinking, text, reason = "end_turn";
    Json stop_sequence;
    Json tools = Json::array();
    ChoiceDelta d;
    while (gen->next(d, [&] { return w.alive(); })) {
      thinking += d.out.reasoning;
      text += d.out.content;
      for (const auto& c : d.out.calls)
        tools.push_back({{"type", "tool_use"}, {"id", random_id("toolu_")}, {"name", c.name}, {"input", tool_input(c.arguments)}});
      if (d.finished) {
        reason = stop_reason(d);
        if (!d.stop_sequence.empty()) stop_sequence = d.stop_sequence;
      }
    }
    if (gen->error()) {
      w.write(error_body(Protocol::kAnthropic, *gen->error()));
      return;
    }
    Json content = Json::array();
    if (!thinking.empty()) content.push_back({{"type", "thinking"}, {"thinking", thinking}, {"signature", ""}});
    if (!text.empty() || tools.empty()) content.push_back({{"type", "text"}, {"text", text}});
    for (auto& t : tools) content.push_back(std::move(t));
    w.write(dump({{"id", random_id("msg_")},
                  {"type", "message"},
                  {"role", "assistant"},
                  {"model", job.spec.model},
                  {"content", content},
                  {"stop_reason", reason},
                  {"stop_sequence", stop_sequence},
                  {"usage", {{"input_tokens", gen->prompt_tokens()}, {"output_tokens", gen->completion_tokens()}}}}));
  });
}

void respond_stream(httplib::Response& res, std::shared_ptr<Generation> gen, AnthropicJob job) {
  respond_later(res, "text/event-stream", [gen, job](SseWriter& w) {
    auto send = [&](const Json& e) { return w.event(e["type"].get<std::string>(), e); };
    Json start = {{"type", "message_start"},
                  {"message", {{"id", random_id("msg_")},
                               {"type", "message"},
                               {"role", "assistant"},
                               {"model", job.spec.model},
                               {"content", Json::array()},
                               {"stop_reason", Json()},
                               {"stop_sequence", Json()},
                               {"usage", {{"input_tokens", gen->prompt_tokens()}, {"output_tokens", 0}}}}}};
    if (!send(start) || !w.event("ping", {{"type", "ping"}})) return;
    int index = -1;
    std::string open;  // type of the open block: "", "thinking" or "text"
    auto close = [&] {
      if (open.empty()) return true;
      open.clear();
      return send({{"type", "content_block_stop"}, {"index", index}});
    };
    auto ensure = [&](const std::string& type) {
      if (open == type) return true;
      if (!close()) return false;
      open = type;
      ++index;
      Json block = type == "thinking" ? Json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                                      : Json{{"type", "text"}, {"text", ""}};
      return send({{"type", "content_block_start"}, {"index", index}, {"content_block", block}});
    };
    std::string reason = "end_turn";
    Json stop_sequence;
    ChoiceDelta d;
    while (gen->next(d, [&] { return w.alive(); })) {
      if (!d.out.reasoning.empty()) {
        if (!ensure("thinking") || !send({{"type", "content_block_delta"}, {"index", index},
                                          {"delta", {{"type", "thinking_delta"}, {"thinking", d.out.reasoning}}}}))
          return;
      }
      if (!d.out.content.empty()) {
        if (!ensure("text") || !send({{"type", "content_block_delta"}, {"index", index},
                                      {"delta", {{"type", "text_delta"}, {"text", d.out.content}}}}))
          return;
      }
      for (const auto& c : d.out.calls) {
        if (!close()) return;
        ++index;
        if (!send({{"type", "content_block_start"}, {"index", index},
                   {"content_block", {{"type", "tool_use"}, {"id", random_id("toolu_")}, {"name", c.name}, {"input", Json::object()}}}}) ||
            !send({{"type", "content_block_delta"}, {"index", index},
                   {"delta", {{"type", "input_json_delta"}, {"partial_json", dump(tool_input(c.arguments))}}}}) ||
            !send({{"type", "content_block_stop"}, {"index", index}}))
          return;
      }
      if (d.finished) {
        reason = stop_reason(d);
        if (!d.stop_sequence.empty()) stop_sequence = d.stop_sequence;
      }
    }
    if (gen->error()) {
      if (gen->error()->http_status != 499) w.write("event: error\ndata: " + error_body(Protocol::kAnthropic, *gen->error()) + "\n\n");
      return;
    }
    if (index < 0 && !ensure("text")) return;
    if (!close()) return;
    if (!send({{"type", "message_delta"},
               {"delta", {{"stop_reason", reason}, {"stop_sequence", stop_sequence}}},
               {"usage", {{"output_tokens", gen->completion_tokens()}}}}))
      return;
    send({{"type", "message_stop"}});
  });
}

}  // namespace

void add_anthropic_routes(httplib::Server& http, ServerState& state) {
  http.Post("/v1/messages", [&state](const httplib::Request& req, httplib::Response& res) {
    guarded(Protocol::kAnthropic, res, [&] {
      const Json body = parse_body(req, state.options().max_body_bytes);
      if (!state.ready()) throw_error(503, "the model is still loading");
      AnthropicJob job = parse_messages_request(state, body);
      auto gen = std::make_shared<Generation>(state, job.spec);
      if (job.stream) respond_stream(res, gen, std::move(job));
      else respond_whole(res, gen, std::move(job));
    });
  });
  http.Post("/v1/messages/count_tokens", [&state](const httplib::Request& req, httplib::Response& res) {
    guarded(Protocol::kAnthropic, res, [&] {
      const Json body = parse_body(req, state.options().max_body_bytes);
      if (!state.ready()) throw_error(503, "the model is still loading");
      send_json(res, 200, dump({{"input_tokens", count_message_tokens(state, body)}}));
    });
  });
}

}  // namespace ft::server
