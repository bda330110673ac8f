// ft chat-template: renders a chat request with a tokenizer directory's chat template and prints the prompt.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/mapped_file.h"
#include "tokenizer/chat_template.h"

namespace ft::cli {

int cmd_chat_template(int argc, char** argv) {
  Args args("chat-template",
            "Renders a chat request with the model's chat template (as transformers' apply_chat_template does) "
            "and prints exactly the prompt, with no added newline.");
  args.required("tokenizer", "DIR", "folder with tokenizer_config.json and/or chat_template.jinja");
  args.required("request", "FILE",
                "JSON object: messages, optional tools and add_generation_prompt; any other key is a template "
                "variable (enable_thinking, reasoning_effort, ...)");
  Status st = args.parse(argc, argv);
  if (!st.ok()) return report_error("chat-template", st);
  auto config = tok::load_chat_config(args.str("tokenizer"));
  if (!config.ok()) return report_error("chat-template", config.status());
  auto text = read_text_file(args.str("request"));
  if (!text.ok()) return report_error("chat-template", text.status());
  auto request = nlohmann::ordered_json::parse(*text, nullptr, false);
  if (request.is_discarded()) return report_error("chat-template", invalid_argument(args.str("request") + ": not JSON"));
  auto context = tok::make_render_context(*config, request);
  if (!context.ok()) return report_error("chat-template", context.status());
  auto prompt = config->chat_template.render(*context);
  if (!prompt.ok()) return report_error("chat-template", prompt.status());
  std::fwrite(prompt->data(), 1, prompt->size(), stdout);
  return 0;
}

}  // namespace ft::cli
