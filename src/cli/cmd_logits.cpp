// ft logits: the logits of a prompt at every position, written as one f32 tensor to a safetensors file.
#include <cstdio>

#include "cli/commands.h"
#include "cli/model_flags.h"
#include "engine/sequence_runner.h"
#include "io/safetensors_writer.h"

namespace ft::cli {

namespace {
Status run_logits(const Args& a) {
  FT_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, a.int_list("tokens"));
  FT_ASSIGN_OR_RETURN(int64_t chunk, a.integer("chunk", 0));
  FT_ASSIGN_OR_RETURN(SessionOptions o, session_options(a));
  if (o.context == 0) o.context = static_cast<int32_t>(tokens.size());
  o.max_tokens = static_cast<int32_t>(chunk > 0 ? std::min<int64_t>(chunk, static_cast<int64_t>(tokens.size()))
                                                : static_cast<int64_t>(tokens.size()));
  FT_ASSIGN_OR_RETURN(ModelSession s, ModelSession::open(o));
  SequenceRunner runner(*s.model, *s.backend, *s.kv);
  std::vector<float> all, last;
  FT_RETURN_IF_ERROR(runner.feed(tokens, static_cast<int32_t>(chunk), &all, last));
  const int64_t t = static_cast<int64_t>(tokens.size()), vocab = s.model->config().vocab_size;
  Tensor logits = Tensor::make(DType::kF32, {t, vocab}, wrap_host(all.data(), all.size() * 4, nullptr));
  return write_safetensors(a.str("out"), {{"logits", logits}}, {{"producer", "ft logits"}});
}
}  // namespace

int cmd_logits(int argc, char** argv) {
  Args a("logits", "Runs the prompt through the model and writes the logits at every position as one float32\n"
                   "tensor `logits` [T, vocab] to a safetensors file.");
  add_model_flags(a);
  a.required("tokens", "IDS", "prompt token ids, comma separated");
  a.required("out", "FILE", "output .safetensors file");
  a.flag("chunk", "N", "feed the prompt through the KV cache N tokens per step (0 = all at once)", "0");
  Status st = a.parse(argc, argv);
  if (st.ok()) st = run_logits(a);
  return st.ok() ? 0 : report_error("logits", st);
}

}  // namespace ft::cli
