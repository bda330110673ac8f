// ft ctl: queries a running server — health, stats, requests, generate (a raw completion, no chat template).
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/http_client.h"

namespace ft::cli {
namespace {

using Json = nlohmann::ordered_json;

void print(const HttpReply& r, bool json) {
  if (json || r.body.is_null()) {
    std::printf("%s\n", r.body.is_null() ? r.text.c_str() : r.body.dump().c_str());
    return;
  }
  std::printf("%s\n", r.body.dump(2).c_str());
}

Status run_ctl(const Args& a) {
  if (a.positionals().empty()) return invalid_argument("a subcommand is needed: health, stats, requests or generate");
  const std::string sub = a.positionals()[0];
  FT_ASSIGN_OR_RETURN(int64_t timeout, a.integer("timeout"));
  HttpClient client(a.str("base-url"), a.str("api-key"), static_cast<int>(timeout));
  const bool json = a.on("json");
  if (sub == "health" || sub == "stats" || sub == "requests") {
    std::string path = sub == "health" ? "/health" : sub == "stats" ? "/v1/stats" : "/v1/requests";
    if (sub == "requests") path += "?since=" + a.str("since") + "&limit=" + a.str("limit");
    FT_ASSIGN_OR_RETURN(HttpReply r, client.get(path));
    if (sub == "health" && !json && r.body.is_object())
      std::printf("%s: %s (%s, %.1f s)\n", r.body.value("model", "").c_str(), r.body.value("status", "").c_str(),
                  r.body.value("step", "").c_str(), r.body.value("elapsed_s", 0.0));
    else
      print(r, json);
    if (r.status != 200) return {StatusCode::kUnsupported, "the server answered HTTP " + std::to_string(r.status)};
    return ok_status();
  }
  if (sub == "generate") {
    if (a.positionals().size() < 2) return invalid_argument("generate needs a prompt");
    FT_ASSIGN_OR_RETURN(int64_t max_tokens, a.integer("max-tokens"));
    Json body = {{"prompt", a.positionals()[1]}, {"max_tokens", max_tokens}, {"ignore_eos", a.on("ignore-eos")}};
    FT_ASSIGN_OR_RETURN(HttpReply r, client.post("/v1/completions", body));
    if (r.status != 200) {
      print(r, true);
      return {StatusCode::kUnsupported, "the server answered HTTP " + std::to_string(r.status)};
    }
    if (json) print(r, true);
    else std::printf("%s\n", r.body["choices"][0]["text"].get<std::string>().c_str());
    return ok_status();
  }
  return invalid_argument("unknown subcommand '" + sub + "' (health, stats, requests, generate)");
}

}  // namespace

int cmd_ctl(int argc, char** argv) {
  Args a("ctl", "Queries a running ft serve: health (GET /health), stats (GET /v1/stats), requests "
                "(GET /v1/requests), generate PROMPT (POST /v1/completions, no chat template).");
  a.positional("subcommand", "health | stats | requests | generate");
  a.positional("prompt", "the prompt of generate");
  a.flag("base-url", "URL", "the server", "http://127.0.0.1:1919");
  a.flag("api-key", "KEY", "the server's API key");
  a.flag("timeout", "S", "seconds to wait for the server", "10");
  a.flag("json", "", "print the raw JSON reply");
  a.flag("max-tokens", "N", "generate: tokens to generate", "32");
  a.flag("ignore-eos", "", "generate: keep going past the end-of-sequence token");
  a.flag("since", "N", "requests: only records after this sequence number", "0");
  a.flag("limit", "N", "requests: at most this many records", "20");
  Status st = a.parse(argc, argv);
  if (st.ok()) st = run_ctl(a);
  return st.ok() ? 0 : report_error("ctl", st);
}

}  // namespace ft::cli
