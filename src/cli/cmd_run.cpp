// ft run: greedy continuation of a prompt — token ids in and out, or text through the model's tokenizer
// (optionally wrapped in its chat template), streamed as it is generated.
#include <algorithm>
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_flags.h"
#include "engine/sequence_runner.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/incremental_decoder.h"
#include "tokenizer/tokenizer.h"

namespace ft::cli {

namespace {
int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// The prompt as text: the chat template's rendering of one user message with --chat, else the text itself.
Result<std::string> prompt_text(const Args& a, const std::string& tokenizer_dir) {
  if (!a.on("chat")) return a.str("prompt");
  FT_ASSIGN_OR_RETURN(tok::TokenizerChatConfig chat, tok::load_chat_config(tokenizer_dir));
  nlohmann::ordered_json request = {{"messages", {{{"role", "user"}, {"content", a.str("prompt")}}}},
                                    {"add_generation_prompt", true}};
  FT_ASSIGN_OR_RETURN(nlohmann::ordered_json context, tok::make_render_context(chat, request));
  return chat.chat_template.render(context);
}

Status run_generate(const Args& a) {
  if (a.has("tokens") == a.has("prompt")) return invalid_argument("give exactly one of --tokens and --prompt");
  FT_ASSIGN_OR_RETURN(int64_t max_new, a.integer("max-tokens", 0));
  FT_ASSIGN_OR_RETURN(SessionOptions o, session_options(a));
  std::unique_ptr<tok::Tokenizer> tokenizer;
  std::vector<int32_t> prompt;
  if (a.has("prompt")) {
    const std::string dir = a.has("tokenizer") ? a.str("tokenizer") : o.model_dir;
    FT_ASSIGN_OR_RETURN(tokenizer, tok::Tokenizer::load(dir));
    FT_ASSIGN_OR_RETURN(std::string text, prompt_text(a, dir));
    prompt = tokenizer->encode(text, /*add_special_tokens=*/!a.on("chat"));
    if (prompt.empty()) return invalid_argument("flag --prompt encodes to no tokens");
  } else {
    FT_ASSIGN_OR_RETURN(prompt, a.int_list("tokens"));
  }
  if (o.context == 0) o.context = static_cast<int32_t>(prompt.size() + static_cast<size_t>(max_new));
  o.max_tokens = static_cast<int32_t>(std::min<size_t>(prompt.size(), 2048));
  FT_ASSIGN_OR_RETURN(ModelSession s, ModelSession::open(o));
  std::vector<int32_t> stop = s.model->config().eos_token_ids;
  if (tokenizer && tokenizer->config().eos_id) stop.push_back(*tokenizer->config().eos_id);
  std::optional<tok::IncrementalDecoder> text_out;
  if (tokenizer) text_out.emplace(*tokenizer, /*skip_special_tokens=*/true);

  SequenceRunner runner(*s.model, *s.backend, *s.kv);
  std::vector<float> logits;
  FT_RETURN_IF_ERROR(runner.feed(prompt, 0, nullptr, logits));
  std::string ids;
  for (int64_t i = 0; i < max_new; ++i) {
    const int32_t next = argmax(logits);
    if (text_out) {
      std::fputs(text_out->push(next).c_str(), stdout);
      std::fflush(stdout);
    } else {
      if (!ids.empty()) ids += ',';
      ids += std::to_string(next);
    }
    if (std::find(stop.begin(), stop.end(), next) != stop.end()) break;
    if (i + 1 < max_new) FT_RETURN_IF_ERROR(runner.feed(std::span<const int32_t>(&next, 1), 1, nullptr, logits));
  }
  if (text_out) std::fputs(text_out->finish().c_str(), stdout);
  else std::fputs(ids.c_str(), stdout);
  std::fputs("\n", stdout);
  return ok_status();
}
}  // namespace

int cmd_run(int argc, char** argv) {
  Args a("run", "Generates a greedy continuation. With --tokens, prints the new token ids; with --prompt, encodes\n"
                "the text with the model's tokenizer (--chat: as one user message through its chat template) and\n"
                "prints the generated text as it comes.");
  add_model_flags(a);
  a.flag("tokens", "IDS", "prompt token ids, comma separated");
  a.flag("prompt", "TEXT", "prompt text");
  a.flag("chat", "", "render --prompt as a user message with the chat template");
  a.flag("tokenizer", "DIR", "tokenizer directory for --prompt (default: --model)");
  a.flag("max-tokens", "N", "tokens to generate", "16");
  Status st = a.parse(argc, argv);
  if (st.ok()) st = run_generate(a);
  return st.ok() ? 0 : report_error("run", st);
}

}  // namespace ft::cli
