// POST /v1/responses (stateless): response objects and the response.* event stream.
#include <memory>

#include "server/generation.h"
#include "server/http_util.h"
#include "server/openai_request.h"
#include "server/routes.h"

namespace ft::server {
namespace {

// Builds the response object and the stream events for one generation, item by item.
class ResponseBuilder {
 public:
  ResponseBuilder(const OpenAIJob& job, const Generation& gen, SseWriter* w) : job_(job), gen_(gen), w_(w) {
    id_ = random_id("resp_");
    created_ = unix_seconds();
  }

  Json response(const std::string& status) const {
    Json r = {{"id", id_}, {"object", "response"}, {"created_at", created_}, {"status", status},
              {"error", Json()}, {"incomplete_details", Json()}, {"model", job_.spec.model}, {"output", output_},
              {"parallel_tool_calls", true}, {"tool_choice", "auto"}, {"tools", Json::array()}};
    if (status == "incomplete") r["incomplete_details"] = {{"reason", "max_output_tokens"}};
    if (status != "in_progress")
      r["usage"] = {{"input_tokens", gen_.prompt_tokens()},
                    {"input_tokens_details", {{"cached_tokens", 0}}},
                    {"output_tokens", gen_.completion_tokens()},
                    {"output_tokens_details", {{"reasoning_tokens", 0}}},
                    {"total_tokens", gen_.prompt_tokens() + gen_.completion_tokens()}};
    return r;
  }
  bool emit(const std::string& type, Json e) {
    if (!w_) return true;
    e["type"] = type;
    e["sequence_number"] = seq_++;
    return w_->event(type, e);
  }
  bool start() {
    return emit("response.created", {{"response", response("in_progress")}}) &&
           emit("response.in_progress", {{"response", response("in_progress")}});
  }
  bool reasoning(const std::string& text) {
    if (text.empty()) return true;
    if (!close_text()) return false;
    Json item = {{"type", "reasoning"}, {"id", random_id("rs_")}, {"summary", Json::array()},
                 {"content", Json::array({{{"type", "reasoning_text"}, {"text", text}}})}, {"status", "completed"}};
    output_.push_back(item);
    const size_t at = output_.size() - 1;
    return emit("response.output_item.added", {{"output_index", at}, {"item", item}}) &&
           emit("response.output_item.done", {{"output_index", at}, {"item", item}});
  }
  bool text(const std::string& delta) {
    if (delta.empty()) return true;
    if (text_index_ < 0) {
      text_id_ = random_id("msg_");
      output_.push_back({{"type", "message"}, {"id", text_id_}, {"status", "in_progress"}, {"role", "assistant"},
                         {"content", Json::array()}});
      text_index_ = static_cast<int>(output_.size()) - 1;
      if (!emit("response.output_item.added", {{"output_index", text_index_}, {"item", output_[text_index_]}}) ||
          !emit("response.content_part.added", {{"item_id", text_id_}, {"output_index", text_index_}, {"content_index", 0},
                                                {"part", part("")}}))
        return false;
    }
    text_ += delta;
    return emit("response.output_text.delta",
                {{"item_id", text_id_}, {"output_index", text_index_}, {"content_index", 0}, {"delta", delta}, {"logprobs", Json::array()}});
  }
  bool call(const ToolCall& c) {
    if (!close_text()) return false;
    const std::string id = random_id("fc_");
    Json item = {{"type", "function_call"}, {"id", id}, {"call_id", random_id("call_")}, {"name", c.name},
                 {"arguments", ""}, {"status", "in_progress"}};
    output_.push_back(item);
    const size_t at = output_.size() - 1;
    if (!emit("response.output_item.added", {{"output_index", at}, {"item", item}})) return false;
    output_[at]["arguments"] = c.arguments;
    output_[at]["status"] = "completed";
    return emit("response.function_call_arguments.delta", {{"item_id", id}, {"output_index", at}, {"delta", c.arguments}}) &&
           emit("response.function_call_arguments.done", {{"item_id", id}, {"output_index", at}, {"arguments", c.arguments}}) &&
           emit("response.output_item.done", {{"output_index", at}, {"item", output_[at]}});
  }
  bool close_text() {
    if (text_index_ < 0) return true;
    Json& item = output_[text_index_];
    item["status"] = "completed";
    item["content"] = Json::array({part(text_)});
    const int at = text_index_;
    text_index_ = -1;
    return emit("response.output_text.done", {{"item_id", text_id_}, {"output_index", at}, {"content_index", 0}, {"text", text_}, {"logprobs", Json::array()}}) &&
           emit("response.content_part.done", {{"item_id", text_id_}, {"output_index", at}, {"content_index", 0}, {"part", part(text_)}}) &&
           emit("response.output_item.done", {{"output_index", at}, {"item", item}});
  }

 private:
  static Json part(const std::string& text) {
    return {{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}, {"logprobs", Json::array()}};
  }
  const OpenAIJob& job_;
  const Generation& gen_;
  SseWriter* w_;
  std::string id_;
  int64_t created_ = 0;
  Json output_ = Json::array();
  int text_index_ = -1;
  std::string text_id_, text_;
  int64_t seq_ = 0;
};

void respond(httplib::Response& res, std::shared_ptr<Generation> gen, OpenAIJob job) {
  const bool stream = job.stream;
  respond_later(res, stream ? "text/event-stream" : "application/json", [gen, job, stream](SseWriter& w) {
    ResponseBuilder b(job, *gen, stream ? &w : nullptr);
    if (!b.start()) return;
    std::string reasoning, status = "completed";
    ChoiceDelta d;
    while (gen->next(d, [&] { return w.alive(); })) {
      reasoning += d.out.reasoning;
      if (!d.out.content.empty() || !d.out.calls.empty() || d.finished) {
        if (!b.reasoning(reasoning)) return;
        reasoning.clear();
      }
      if (!b.text(d.out.content)) return;
      for (const auto& c : d.out.calls)
        if (!b.call(c)) return;
      if (d.finished && d.finish_reason == "length") status = "incomplete";
    }
    if (gen->error()) {
      if (gen->error()->http_status == 499) return;
      if (stream) b.emit("error", {{"code", Json()}, {"message", gen->error()->message}, {"param", Json()}});
      else w.write(error_body(Protocol::kOpenAI, *gen->error()));
      return;
    }
    if (!b.close_text()) return;
    if (stream) b.emit(status == "completed" ? "response.completed" : "response.incomplete", {{"response", b.response(status)}});
    else w.write(dump(b.response(status)));
  });
}

}  // namespace

void add_openai_responses_routes(httplib::Server& http, ServerState& state) {
  http.Post("/v1/responses", [&state](const httplib::Request& req, httplib::Response& res) {
    guarded(Protocol::kOpenAI, res, [&] {
      const Json body = parse_body(req, state.options().max_body_bytes);
      if (!state.ready()) throw_error(503, "the model is still loading");
      OpenAIJob job = parse_responses_request(state, body);
      auto gen = std::make_shared<Generation>(state, job.spec);
      respond(res, gen, std::move(job));
    });
  });
}

}  // namespace ft::server
