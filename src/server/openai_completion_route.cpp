// POST /v1/completions: text_completion bodies and streams, one generation per prompt.
#include <memory>

#include "server/generation.h"
#include "server/http_util.h"
#include "server/openai_request.h"
#include "server/routes.h"

namespace ft::server {
namespace {

using Generations = std::vector<std::shared_ptr<Generation>>;

// The legacy logprobs object for the tokens of one delta.
void append_logprobs(Json& lp, const std::vector<TokenInfo>& tokens, size_t& offset) {
  for (const auto& t : tokens) {
    lp["tokens"].push_back(t.text);
    lp["token_logprobs"].push_back(t.logprob);
    Json top = Json::object();
    for (const auto& [text, v] : t.top) top[text] = v;
    lp["top_logprobs"].push_back(top);
    lp["text_offset"].push_back(offset);
    offset += t.text.size();
  }
}

Json empty_logprobs() {
  return {{"tokens", Json::array()}, {"token_logprobs", Json::array()}, {"top_logprobs", Json::array()},
          {"text_offset", Json::array()}};
}

Json usage_of(const Generations& gens) {
  int32_t prompt = 0, completion = 0;
  for (const auto& g : gens) {
    prompt += g->prompt_tokens();
    completion += g->completion_tokens();
  }
  return {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
}

void respond(httplib::Response& res, Generations gens, OpenAIJob job) {
  const bool stream = job.stream;
  respond_later(res, stream ? "text/event-stream" : "application/json", [gens, job, stream](SseWriter& w) {
    const Json base = {{"id", random_id("cmpl-")}, {"object", "text_completion"}, {"created", unix_seconds()},
                       {"model", job.spec.model}};
    Json choices = Json::array();
    for (size_t p = 0; p < gens.size(); ++p) {
      Generation& g = *gens[p];
      const int32_t n = g.n_choices();
      std::vector<std::string> text(static_cast<size_t>(n)), finish(static_cast<size_t>(n));
      std::vector<Json> lps(static_cast<size_t>(n), empty_logprobs());
      std::vector<size_t> offsets(static_cast<size_t>(n), 0);
      ChoiceDelta d;
      while (g.next(d, [&] { return w.alive(); })) {
        const size_t c = static_cast<size_t>(d.choice);
        const int64_t index = static_cast<int64_t>(p) * n + d.choice;
        if (stream) {
          if (d.out.content.empty() && d.tokens.empty() && !d.finished) continue;
          Json lp = Json();
          if (job.logprobs) {
            lp = empty_logprobs();
            append_logprobs(lp, d.tokens, offsets[c]);
          }
          Json chunk = base;
          chunk["choices"] = Json::array({{{"index", index}, {"text", d.out.content}, {"logprobs", lp},
                                           {"finish_reason", d.finished ? Json(d.finish_reason) : Json()}}});
          if (!w.data(chunk)) return;
        } else {
          text[c] += d.out.content;
          if (job.logprobs) append_logprobs(lps[c], d.tokens, offsets[c]);
          if (d.finished) finish[c] = d.finish_reason;
        }
      }
      if (g.error()) {
        if (g.error()->http_status == 499) return;
        const std::string err = error_body(Protocol::kOpenAI, *g.error());
        w.write(stream ? "data: " + err + "\n\n" : err);
        return;
      }
      if (!stream)
        for (int32_t i = 0; i < n; ++i)
          choices.push_back({{"index", static_cast<int64_t>(p) * n + i}, {"text", text[static_cast<size_t>(i)]},
                             {"logprobs", job.logprobs ? lps[static_cast<size_t>(i)] : Json()},
                             {"finish_reason", finish[static_cast<size_t>(i)]}});
    }
    if (!stream) {
      Json body = base;
      body["choices"] = choices;
      body["usage"] = usage_of(gens);
      w.write(dump(body));
      return;
    }
    if (job.include_usage) {
      Json u = base;
      u["choices"] = Json::array();
      u["usage"] = usage_of(gens);
      if (!w.data(u)) return;
    }
    w.write("data: [DONE]\n\n");
  });
}

}  // namespace

void add_openai_completion_routes(httplib::Server& http, ServerState& state) {
  http.Post("/v1/completions", [&state](const httplib::Request& req, httplib::Response& res) {
    guarded(Protocol::kOpenAI, res, [&] {
      const Json body = parse_body(req, state.options().max_body_bytes);
      if (!state.ready()) throw_error(503, "the model is still loading");
      std::vector<OpenAIJob> jobs = parse_completion_request(state, body);
      Generations gens;
      for (const auto& job : jobs) gens.push_back(std::make_shared<Generation>(state, job.spec));
      respond(res, std::move(gens), jobs.front());
    });
  });
}

}  // namespace ft::server
