// Control routes: GET /health, /v1/models, /v1/stats, /metrics, /v1/requests.
#include <cstdlib>

#include "server/http_util.h"
#include "server/routes.h"

namespace ft::server {
namespace {

Json model_json(const ServerState& s) {
  return {{"id", s.model_name()}, {"object", "model"}, {"created", 0}, {"owned_by", "freetoken"},
          {"type", "model"}, {"display_name", s.model_name()}, {"created_at", "1970-01-01T00:00:00Z"}};
}

Json stats_json(ServerState& s) {
  Json j = {{"status", phase_name(s.phase())}, {"model", s.model_name()},
            {"uptime_s", s.seconds_since_start()},
            {"active_generations", s.active_generations().load()}};
  if (s.has_engine()) {
    const EngineStats e = s.engine().stats();
    j["requests"] = {{"running", e.running}, {"queued", e.queued}};
    j["kv"] = {{"pages_total", e.kv_pages_total}, {"pages_used", e.kv_pages_used},
               {"page_size", s.options().engine.page_size}, {"context_length", s.engine().context_length()}};
    j["throughput"] = {{"decode_tokens_per_s", e.decode_tokens_per_s}, {"prefill_tokens_per_s", e.prefill_tokens_per_s}};
    j["tokens"] = {{"prompt", e.prompt_tokens}, {"generated", e.generated_tokens}};
    j["preemptions"] = e.preemptions;
    Json layers = Json::array();
    for (const auto& l : e.expert_layers) {
      const int64_t total = l.hits + l.fetched + l.cpu;
      layers.push_back({{"hits", l.hits}, {"fetched", l.fetched}, {"cpu", l.cpu},
                        {"hit_rate", total ? static_cast<double>(l.hits) / static_cast<double>(total) : 0.0},
                        {"copy_ms", l.copy_ms}, {"cpu_ms", l.cpu_ms}});
    }
    const EngineStats::ExpertLayer t = e.expert_totals();
    const int64_t lookups = t.hits + t.fetched + t.cpu;
    j["experts"] = {{"moe_backend", e.moe_backend},
                    {"cache_slots", e.expert_slots},
                    {"experts_total", e.expert_keys},
                    {"fetch_share", e.fetch_share},
                    {"hits", t.hits},
                    {"fetched", t.fetched},
                    {"cpu", t.cpu},
                    {"hit_rate", lookups ? static_cast<double>(t.hits) / static_cast<double>(lookups) : 0.0},
                    {"bytes_fetched", e.expert_bytes_fetched},
                    {"copy_seconds", 1e-3 * t.copy_ms},
                    {"cpu_seconds", 1e-3 * t.cpu_ms},
                    {"step_seconds", e.step_seconds},
                    {"device_bytes_in_use", e.device_bytes_in_use},
                    {"layers", std::move(layers)}};
    j["model_info"] = {{"input_modalities", Json::array({"text"})},
                       {"reasoning_parser", s.reasoning_parser() ? "qwen3" : "off"},
                       {"tool_call_parser", s.tool_call_parser() ? "qwen3" : "off"}};
  }
  return j;
}

uint64_t query_number(const httplib::Request& req, const char* key, uint64_t fallback) {
  if (!req.has_param(key)) return fallback;
  const std::string v = req.get_param_value(key);
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || v[0] == '-') throw_bad_request(std::string("query parameter '") + key + "' must be a number", key);
  return n;
}

}  // namespace

void add_control_routes(httplib::Server& http, ServerState& state) {
  http.Get("/health", [&state](const httplib::Request&, httplib::Response& res) {
    const Phase p = state.phase();
    Json j = {{"status", phase_name(p)}, {"model", state.model_name()}, {"step", state.load_step()},
              {"elapsed_s", state.seconds_since_start()}};
    send_json(res, p == Phase::kReady ? 200 : 503, dump(j));
  });
  http.Get("/v1/models", [&state](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, dump({{"object", "list"}, {"data", Json::array({model_json(state)})}, {"has_more", false},
                              {"first_id", state.model_name()}, {"last_id", state.model_name()}}));
  });
  http.Get(R"(/v1/models/(.+))", [&state](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] != state.model_name())
      return send_error(res, Protocol::kOpenAI, {404, "model '" + std::string(req.matches[1]) + "' is not served here", "model", "model_not_found"});
    send_json(res, 200, dump(model_json(state)));
  });
  http.Get("/v1/stats", [&state](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, dump(stats_json(state)));
  });
  http.Get("/metrics", [&state](const httplib::Request&, httplib::Response& res) {
    const bool ready = state.has_engine();
    EngineStats e;
    if (ready) e = state.engine().stats();
    res.set_content(state.metrics().prometheus(ready ? &e : nullptr, state.phase() == Phase::kReady,
                                               state.active_generations().load()),
                    "text/plain; version=0.0.4");
  });
  http.Get("/v1/requests", [&state](const httplib::Request& req, httplib::Response& res) {
    guarded(Protocol::kOpenAI, res, [&] {
      const uint64_t since = query_number(req, "since", 0);
      const uint64_t limit = query_number(req, "limit", 100);
      send_json(res, 200, dump({{"object", "list"}, {"data", state.requests().list(since, limit)}}));
    });
  });
}

}  // namespace ft::server
