// ft shell: chat in the terminal, with a running server (--server URL) or a model served in-process (--model).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/http_client.h"
#include "cli/serve_flags.h"
#include "server/http_server.h"

namespace ft::cli {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kHelp =
    "/help   this list\n/reset  forget the conversation\n/think  toggle thinking (enable_thinking)\n"
    "/quit   leave (also Ctrl-D)\n";

Status chat_loop(HttpClient& client, const Args& a) {
  FT_ASSIGN_OR_RETURN(int64_t max_tokens, a.integer("max-tokens"));
  FT_ASSIGN_OR_RETURN(double temperature, a.number("temperature"));
  const bool tty = isatty(STDOUT_FILENO);
  Json messages = Json::array();
  if (a.has("system")) messages.push_back({{"role", "system"}, {"content", a.str("system")}});
  bool think = !a.on("no-think");
  std::string line;
  for (;;) {
    if (tty) std::fputs("> ", stdout), std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    if (line == "/quit" || line == "/exit") break;
    if (line == "/help") { std::fputs(kHelp, stdout); continue; }
    if (line == "/reset") {
      messages.erase(messages.begin() + (a.has("system") ? 1 : 0), messages.end());
      std::puts("(conversation cleared)");
      continue;
    }
    if (line == "/think") {
      think = !think;
      std::printf("(thinking %s)\n", think ? "on" : "off");
      continue;
    }
    messages.push_back({{"role", "user"}, {"content", line}});
    Json body = {{"messages", messages}, {"stream", true}, {"max_tokens", max_tokens}, {"temperature", temperature},
                 {"chat_template_kwargs", {{"enable_thinking", think}}}};
    std::string reply;
    bool in_reasoning = false;
    auto st = client.post_stream("/v1/chat/completions", body, [&](const std::string& data) {
      if (data == "[DONE]") return;
      auto j = Json::parse(data, nullptr, false);
      if (j.is_discarded() || !j.contains("choices") || j["choices"].empty()) return;
      const Json& d = j["choices"][0]["delta"];
      if (d.contains("reasoning_content") && d["reasoning_content"].is_string()) {
        if (!in_reasoning && tty) std::fputs("\x1b[2m", stdout);
        in_reasoning = true;
        std::fputs(d["reasoning_content"].get<std::string>().c_str(), stdout);
      }
      if (d.contains("content") && d["content"].is_string() && !d["content"].get<std::string>().empty()) {
        if (in_reasoning) std::fputs(tty ? "\x1b[0m\n" : "\n", stdout);
        in_reasoning = false;
        reply += d["content"].get<std::string>();
        std::fputs(d["content"].get<std::string>().c_str(), stdout);
      }
      std::fflush(stdout);
    });
    if (in_reasoning && tty) std::fputs("\x1b[0m", stdout);
    std::fputs("\n", stdout);
    if (!st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.status().message().c_str());
      messages.erase(messages.end() - 1);
      continue;
    }
    messages.push_back({{"role", "assistant"}, {"content", reply}});
  }
  return ok_status();
}

Status run_shell(const Args& a) {
  FT_ASSIGN_OR_RETURN(int64_t timeout, a.integer("timeout"));
  if (!a.has("model")) {
    HttpClient client(a.str("server"), a.str("api-key"), static_cast<int>(timeout));
    FT_ASSIGN_OR_RETURN(HttpReply health, client.get("/health"));
    if (health.status != 200) return {StatusCode::kUnsupported, "the server is not ready: " + health.text};
    return chat_loop(client, a);
  }
  FT_ASSIGN_OR_RETURN(server::ServerOptions options, serve_options(a));
  options.host = "127.0.0.1";
  options.port = 0;
  server::ServerState state(options);
  server::HttpServer http(state);
  FT_RETURN_IF_ERROR(http.start());
  FT_RETURN_IF_ERROR(state.load());
  std::fprintf(stderr, "ft shell: %s loaded; /help lists the commands\n", state.model_name().c_str());
  HttpClient client("http://127.0.0.1:" + std::to_string(http.port()), options.api_key, static_cast<int>(timeout));
  Status st = chat_loop(client, a);
  http.stop();
  state.shutdown_engine();
  return st;
}

}  // namespace

int cmd_shell(int argc, char** argv) {
  Args a("shell", "Chats in the terminal with a running server (--server) or a model served in-process (--model).");
  a.flag("server", "URL", "the server to attach to", "http://127.0.0.1:1919");
  a.flag("system", "TEXT", "a system prompt");
  a.flag("max-tokens", "N", "tokens per reply", "512");
  a.flag("temperature", "F", "sampling temperature", "0.7");
  a.flag("no-think", "", "start with thinking off (/think toggles it)");
  a.flag("timeout", "S", "seconds to wait for the server", "600");
  add_serve_flags(a, false);
  Status st = a.parse(argc, argv);
  if (st.ok()) st = run_shell(a);
  return st.ok() ? 0 : report_error("shell", st);
}

}  // namespace ft::cli
