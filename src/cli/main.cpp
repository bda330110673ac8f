// ft: the FreeToken binary. Dispatches to one subcommand.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"

namespace ft::cli {

int report_error(const char* command, const Status& status) {
  if (status.code() == StatusCode::kAborted && status.message() == "help") return 0;
  std::fprintf(stderr, "ft %s: %s\n", command, status.message().c_str());
  return 1;
}

namespace {

struct Command {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
};

constexpr Command kCommands[] = {
    {"serve", cmd_serve, "serve a model over HTTP (OpenAI- and Anthropic-compatible)"},
    {"shell", cmd_shell, "chat in the terminal with a running server or a model directory"},
    {"ctl", cmd_ctl, "query a running server: health, stats, requests, generate"},
    {"run", cmd_run, "generate a greedy continuation from a model"},
    {"logits", cmd_logits, "write the logits of a prompt at every position to a safetensors file"},
    {"make-model", cmd_make_model, "write a random Hugging Face checkpoint of any size from a config.json"},
    {"bench", cmd_bench, "benchmarks: ft bench decode --model DIR --device cuda"},
    {"tokenize", cmd_tokenize, "print the token ids of a text"},
    {"chat-template", cmd_chat_template, "render a chat request with the model's chat template"},
};

void print_usage() {
  std::printf("usage: ft COMMAND [flags]   (ft COMMAND --help for its flags)\n\n"
              "FreeToken: serve Mixture-of-Experts LLMs on the hardware you own.\n\ncommands:\n");
  for (const auto& c : kCommands) std::printf("  %-16s%s\n", c.name, c.summary);
}

}  // namespace
}  // namespace ft::cli

int main(int argc, char** argv) {
  using namespace ft::cli;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : kCommands)
    if (std::strcmp(argv[1], c.name) == 0) return c.run(argc - 1, argv + 1);
  std::fprintf(stderr, "ft: unknown command '%s' (see ft --help)\n", argv[1]);
  return 2;
}
