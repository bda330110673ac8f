// POST /v1/chat/completions: chat.completion bodies and chat.completion.chunk streams.
#include <memory>

#include "server/generation.h"
#include "server/http_util.h"
#include "server/openai_request.h"
#include "server/routes.h"

namespace ft::server {
namespace {

Json usage_json(const Generation& g) {
  return {{"prompt_tokens", g.prompt_tokens()},
          {"completion_tokens", g.completion_tokens()},
          {"total_tokens", g.prompt_tokens() + g.completion_tokens()}};
}

Json logprob_entries(const std::vector<TokenInfo>& tokens) {
  auto bytes = [](const std::string& s) {
    Json b = Json::array();
    for (unsigned char c : s) b.push_back(static_cast<int>(c));
    return b;
  };
  Json out = Json::array();
  for (const auto& t : tokens) {
    Json top = Json::array();
    for (const auto& [text, lp] : t.top) top.push_back({{"token", text}, {"logprob", lp}, {"bytes", bytes(text)}});
    out.push_back({{"token", t.text}, {"logprob", t.logprob}, {"bytes", bytes(t.text)}, {"top_logprobs", top}});
  }
  return out;
}

Json tool_call_json(const ToolCall& c, const std::string& id) {
  return {{"id", id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}};
}

struct ChoiceAccum {
  std::string content, reasoning;
  Json calls = Json::array();
  Json logprobs = Json::array();
  std::string finish_reason;
};

void respond_whole(httplib::Response& res, std::shared_ptr<Generation> gen, OpenAIJob job) {
  respond_later(res, "application/json", [gen, job](SseWriter& w) {
    std::vector<ChoiceAccum> acc(static_cast<size_t>(gen->n_choices()));
    ChoiceDelta d;
    while (gen->next(d, [&] { return w.alive(); })) {
      ChoiceAccum& a = acc[static_cast<size_t>(d.choice)];
      a.content += d.out.content;
      a.reasoning += d.out.reasoning;
      for (const auto& c : d.out.calls) a.calls.push_back(tool_call_json(c, random_id("call_")));
      for (auto& e : logprob_entries(d.tokens)) a.logprobs.push_back(std::move(e));
      if (d.finished) a.finish_reason = d.finish_reason;
    }
    if (gen->error()) {
      w.write(error_body(Protocol::kOpenAI, *gen->error()));
      return;
    }
    Json choices = Json::array();
    for (size_t i = 0; i < acc.size(); ++i) {
      Json msg = {{"role", "assistant"}};
      msg["content"] = acc[i].content.empty() && !acc[i].calls.empty() ? Json() : Json(acc[i].content);
      if (!acc[i].reasoning.empty()) msg["reasoning_content"] = acc[i].reasoning;
      if (!acc[i].calls.empty()) msg["tool_calls"] = acc[i].calls;
      choices.push_back({{"index", i},
                         {"message", msg},
                         {"logprobs", job.logprobs ? Json{{"content", acc[i].logprobs}} : Json()},
                         {"finish_reason", acc[i].finish_reason}});
    }
    w.write(dump({{"id", random_id("chatcmpl-")},
                  {"object", "chat.completion"},
                  {"created", unix_seconds()},
                  {"model", job.spec.model},
                  {"choices", choices},
                  {"usage", usage_json(*gen)}}));
  });
}

void respond_stream(httplib::Response& res, std::shared_ptr<Generation> gen, OpenAIJob job) {
  respond_later(res, "text/event-stream", [gen, job](SseWriter& w) {
    const Json base = {{"id", random_id("chatcmpl-")},
                       {"object", "chat.completion.chunk"},
                       {"created", unix_seconds()},
                       {"model", job.spec.model}};
    auto chunk = [&](int32_t index, Json delta, const Json& logprobs, const std::string& finish) {
      Json c = base;
      c["choices"] = Json::array({{{"index", index},
                                   {"delta", std::move(delta)},
                                   {"logprobs", logprobs},
                                   {"finish_reason", finish.empty() ? Json() : Json(finish)}}});
      return w.data(c);
    };
    for (int32_t i = 0; i < gen->n_choices(); ++i)
      if (!chunk(i, {{"role", "assistant"}, {"content", ""}}, Json(), "")) return;
    std::vector<int> n_calls(static_cast<size_t>(gen->n_choices()), 0);
    ChoiceDelta d;
    while (gen->next(d, [&] { return w.alive(); })) {
      const Json lp = job.logprobs && !d.tokens.empty() ? Json{{"content", logprob_entries(d.tokens)}} : Json();
      if (!d.out.reasoning.empty() && !chunk(d.choice, {{"reasoning_content", d.out.reasoning}}, Json(), "")) return;
      if ((!d.out.content.empty() || !lp.is_null()) && !chunk(d.choice, {{"content", d.out.content}}, lp, "")) return;
      for (const auto& call : d.out.calls) {
        const int k = n_calls[static_cast<size_t>(d.choice)]++;
        Json start = {{"index", k},
                      {"id", random_id("call_")},
                      {"type", "function"},
                      {"function", {{"name", call.name}, {"arguments", ""}}}};
        if (!chunk(d.choice, {{"tool_calls", Json::array({start})}}, Json(), "")) return;
        Json args = {{"index", k}, {"function", {{"arguments", call.arguments}}}};
        if (!chunk(d.choice, {{"tool_calls", Json::array({args})}}, Json(), "")) return;
      }
      if (d.finished && !chunk(d.choice, Json::object(), Json(), d.finish_reason)) return;
    }
    if (gen->error()) {
      if (gen->error()->http_status != 499) w.write("data: " + error_body(Protocol::kOpenAI, *gen->error()) + "\n\n");
      return;
    }
    if (job.include_usage) {
      Json u = base;
      u["choices"] = Json::array();
      u["usage"] = usage_json(*gen);
      if (!w.data(u)) return;
    }
    w.write("data: [DONE]\n\n");
  });
}

}  // namespace

void add_openai_chat_routes(httplib::Server& http, ServerState& state) {
  http.Post("/v1/chat/completions", [&state](const httplib::Request& req, httplib::Response& res) {
    guarded(Protocol::kOpenAI, res, [&] {
      const Json body = parse_body(req, state.options().max_body_bytes);
      if (!state.ready()) throw_error(503, "the model is still loading");
      OpenAIJob job = parse_chat_request(state, body);
      auto gen = std::make_shared<Generation>(state, job.spec);
      if (job.stream) respond_stream(res, gen, std::move(job));
      else respond_whole(res, gen, std::move(job));
    });
  });
}

}  // namespace ft::server
