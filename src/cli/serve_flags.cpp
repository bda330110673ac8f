// ft serve's flags, named as upstream FreeToken's docs/cli.md names them where it has them.
#include "cli/serve_flags.h"

#include "cli/model_flags.h"

namespace ft::cli {

void add_engine_flags(Args& a) {
  a.flag("device", "NAME", "cpu or cuda", "cpu");
  a.flag("dtype", "TYPE", "activation dtype: f32 (CPU) or bf16/f32 (CUDA)", "f32");
  a.flag("threads", "N", "CPU threads (0 = one per core)", "0");
  a.flag("max-running-requests", "N", "max concurrently running requests", "4");
  a.flag("max-prefill-length", "N", "chunked-prefill chunk size in tokens", "8192");
  a.flag("context-length", "N", "tokens per sequence (0 = the model's max_position_embeddings)", "0");
  a.flag("page-size", "N", "tokens per KV page", "16");
  a.flag("num-pages", "N", "KV pages (overrides the memory budget)", "0");
  a.flag("num-tokens", "N", "KV tokens (overrides the memory budget)", "0");
  a.flag("memory-budget", "SIZE", "bytes the engine may use, e.g. 24G (default: --memory-ratio of free memory)");
  a.flag("memory-ratio", "F", "fraction of free memory the engine may use", "0.9");
  a.flag("disable-cuda-graph", "", "run decode steps eagerly instead of replaying captured CUDA graphs");
  add_moe_flags(a);
}

void add_serve_flags(Args& a, bool model_required) {
  if (model_required)
    a.required("model", "DIR", "Hugging Face checkpoint directory (config.json, *.safetensors, tokenizer)");
  else
    a.flag("model", "DIR", "serve this checkpoint in-process instead of attaching to --server");
  add_engine_flags(a);
  a.flag("host", "ADDR", "bind address", "127.0.0.1");
  a.flag("port", "N", "bind port (0: any free port)", "1919");
  a.flag("served-model-name", "NAME", "model id reported by /v1/models (default: basename of --model)");
  a.flag("api-key", "KEY", "require this key (Authorization: Bearer KEY or x-api-key: KEY)");
  a.flag("tokenizer", "DIR", "tokenizer directory (default: --model)");
  a.flag("chat-template", "FILE", "Jinja chat template overriding the tokenizer's");
  a.flag("max-output-tokens", "N", "output budget of requests that omit one", "32768");
  a.flag("reasoning-parser", "NAME", "auto (<think> blocks when the chat template has them) or off", "auto");
  a.flag("tool-call-parser", "NAME", "auto (<tool_call> blocks when the chat template has them) or off", "auto");
  a.flag("allowed-local-media-path", "DIR", "directory file:// image references may name (unset: refused)");
  a.flag("allowed-media-domains", "LIST", "comma-separated hosts http(s) image URLs may name (unset: refused)");
  a.flag("max-body-size", "SIZE", "largest request body; larger ones get 413", "32M");
  a.flag("http-threads", "N", "HTTP worker threads (each streaming client holds one)", "128");
}

Result<EngineOptions> engine_options(const Args& a) {
  EngineOptions e;
  e.model_dir = a.str("model");
  e.device = a.str("device");
  e.dtype = a.str("dtype");
  FT_ASSIGN_OR_RETURN(int64_t threads, a.integer("threads", 0, 4096));
  e.n_threads = static_cast<int>(threads);
  FT_ASSIGN_OR_RETURN(int64_t running, a.integer("max-running-requests", 1, 4096));
  e.max_running_requests = static_cast<int32_t>(running);
  FT_ASSIGN_OR_RETURN(int64_t prefill, a.integer("max-prefill-length", 1, 1 << 24));
  e.max_prefill_length = static_cast<int32_t>(prefill);
  FT_ASSIGN_OR_RETURN(int64_t context, a.integer("context-length", 0, 1 << 24));
  e.context_length = static_cast<int32_t>(context);
  FT_ASSIGN_OR_RETURN(int64_t page, a.integer("page-size", 1, 4096));
  e.page_size = static_cast<int32_t>(page);
  FT_ASSIGN_OR_RETURN(e.num_pages, a.integer("num-pages", 0, int64_t{1} << 40));
  FT_ASSIGN_OR_RETURN(e.num_tokens, a.integer("num-tokens", 0, int64_t{1} << 40));
  if (e.num_pages && e.num_tokens) return invalid_argument("flags --num-pages and --num-tokens exclude each other");
  if (a.has("memory-budget")) {
    FT_ASSIGN_OR_RETURN(e.memory_budget, parse_size(a.str("memory-budget")));
  }
  FT_ASSIGN_OR_RETURN(e.memory_ratio, a.number("memory-ratio"));
  if (!(e.memory_ratio > 0 && e.memory_ratio <= 1)) return invalid_argument("flag --memory-ratio must be in (0, 1]");
  e.cuda_graph = !a.on("disable-cuda-graph");
  FT_ASSIGN_OR_RETURN(MoeOptions moe, moe_options(a));
  e.moe_backend = moe_backend_name(moe.backend);
  e.moe_cpu_threads = moe.cpu_threads;
  e.moe_cache_size = moe.cache_size;
  e.moe_cache_rate = moe.cache_rate;
  e.kv_reserve_tokens = moe.kv_reserve_tokens;
  e.bw_profile = moe.profile_path;
  return e;
}

Result<server::ServerOptions> serve_options(const Args& a) {
  server::ServerOptions o;
  o.host = a.str("host");
  FT_ASSIGN_OR_RETURN(int64_t port, a.integer("port", 0, 65535));
  o.port = static_cast<int>(port);
  o.served_model_name = a.str("served-model-name");
  o.api_key = a.str("api-key");
  o.tokenizer_dir = a.str("tokenizer");
  o.chat_template_file = a.str("chat-template");
  FT_ASSIGN_OR_RETURN(int64_t max_out, a.integer("max-output-tokens", 1, 1 << 30));
  o.max_output_tokens = static_cast<int32_t>(max_out);
  FT_ASSIGN_OR_RETURN(uint64_t body, parse_size(a.str("max-body-size")));
  if (body < 1024) return invalid_argument("flag --max-body-size must be at least 1K");
  o.max_body_bytes = body;
  FT_ASSIGN_OR_RETURN(int64_t http_threads, a.integer("http-threads", 4, 4096));
  o.http_threads = static_cast<int>(http_threads);
  o.reasoning_parser = a.str("reasoning-parser");
  o.tool_call_parser = a.str("tool-call-parser");
  for (const auto* p : {&o.reasoning_parser, &o.tool_call_parser})
    if (*p != "auto" && *p != "off" && *p != "qwen3") return invalid_argument("parser flags take auto, qwen3 or off");
  o.media.local_root = a.str("allowed-local-media-path");
  o.media.allowed_domains = server::parse_domain_list(a.str("allowed-media-domains"));

  FT_ASSIGN_OR_RETURN(o.engine, engine_options(a));
  return o;
}

}  // namespace ft::cli
