// ft run: greedy continuation of a prompt.
#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "cli/model_flags.h"
#include "engine/sequence_runner.h"

namespace ft::cli {

namespace {
int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

Status run_generate(const Args& a) {
  FT_ASSIGN_OR_RETURN(std::vector<int32_t> prompt, a.int_list("tokens"));
  FT_ASSIGN_OR_RETURN(int64_t max_new, a.integer("max-tokens"));
  if (max_new < 0) return invalid_argument("flag --max-tokens must be >= 0");
  FT_ASSIGN_OR_RETURN(SessionOptions o, session_options(a));
  if (o.context == 0) o.context = static_cast<int32_t>(prompt.size() + static_cast<size_t>(max_new));
  o.max_tokens = static_cast<int32_t>(std::min<size_t>(prompt.size(), 2048));
  FT_ASSIGN_OR_RETURN(ModelSession s, ModelSession::open(o));
  const auto& eos = s.model->config().eos_token_ids;
  SequenceRunner runner(*s.model, *s.backend, *s.kv);
  std::vector<float> logits;
  FT_RETURN_IF_ERROR(runner.feed(prompt, 0, nullptr, logits));
  std::vector<int32_t> out;
  for (int64_t i = 0; i < max_new; ++i) {
    const int32_t next = argmax(logits);
    out.push_back(next);
    if (std::find(eos.begin(), eos.end(), next) != eos.end()) break;
    if (i + 1 < max_new) FT_RETURN_IF_ERROR(runner.feed(std::span<const int32_t>(&out.back(), 1), 1, nullptr, logits));
  }
  std::string line;
  for (size_t i = 0; i < out.size(); ++i) {
    if (i) line += ',';
    line += std::to_string(out[i]);
  }
  std::printf("%s\n", line.c_str());
  return ok_status();
}
}  // namespace

int cmd_run(int argc, char** argv) {
  Args a("run", "Generates a greedy continuation of the prompt and prints the new token ids.");
  add_model_flags(a);
  a.required("tokens", "IDS", "prompt token ids, comma separated");
  a.flag("max-tokens", "N", "tokens to generate", "16");
  Status st = a.parse(argc, argv);
  if (st.ok()) st = run_generate(a);
  return st.ok() ? 0 : report_error("run", st);
}

}  // namespace ft::cli
