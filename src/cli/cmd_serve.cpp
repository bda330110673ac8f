// ft serve: the OpenAI- and Anthropic-compatible HTTP server. Binds first (so /health answers while the
// model loads), prints one ready line, and stops cleanly on SIGINT / SIGTERM.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "cli/serve_flags.h"
#include "server/http_server.h"

namespace ft::cli {

namespace {

// Blocks SIGINT, SIGTERM and SIGUSR1 (the loader's "done") in this thread and every thread created
// afterwards; the main thread takes them with sigwait.
void block_signals(sigset_t& set) {
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

Status serve(const Args& a) {
  FT_ASSIGN_OR_RETURN(server::ServerOptions options, serve_options(a));
  sigset_t signals;
  block_signals(signals);
  server::ServerState state(options);
  server::HttpServer http(state);
  FT_RETURN_IF_ERROR(http.start());
  const std::string url = "http://" + options.host + ":" + std::to_string(http.port());
  std::fprintf(stderr, "ft serve: listening on %s, loading %s\n", url.c_str(), options.engine.model_dir.c_str());

  // Loading runs on its own thread so that a signal during a long load still stops the server.
  Status loaded;
  std::thread loader([&] { loaded = state.load(); kill(getpid(), SIGUSR1); });
  int sig = 0;
  sigwait(&signals, &sig);
  if (sig == SIGUSR1) {
    loader.join();
    if (!loaded.ok()) {
      http.stop();
      return loaded;
    }
    std::printf("ft serve: ready on %s (model %s, context %d, %d KV pages)\n", url.c_str(), state.model_name().c_str(),
                state.engine().context_length(), state.engine().stats().kv_pages_total);
    std::fflush(stdout);
    do sigwait(&signals, &sig);
    while (sig == SIGUSR1);
  } else {
    std::fprintf(stderr, "ft serve: signal %d while loading; stopping after the load\n", sig);
    loader.join();
  }
  std::fprintf(stderr, "ft serve: stopping\n");
  http.stop();
  state.shutdown_engine();
  return ok_status();
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  Args a("serve", "Serves a model over HTTP: OpenAI /v1/chat/completions, /v1/completions, /v1/responses, "
                  "/v1/models; Anthropic /v1/messages; /health, /v1/stats, /metrics, /v1/requests.");
  add_serve_flags(a, true);
  Status st = a.parse(argc, argv);
  if (st.ok()) st = serve(a);
  return st.ok() ? 0 : report_error("serve", st);
}

}  // namespace ft::cli
