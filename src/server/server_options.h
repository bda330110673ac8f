// ServerOptions: everything `ft serve` configures besides the engine itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "freetoken/engine.h"
#include "server/media.h"

namespace ft::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 1919;                    // 0: any free port
  std::string served_model_name;      // default: the model directory's basename
  std::string api_key;                // empty: no authentication
  std::string tokenizer_dir;          // default: the model directory
  std::string chat_template_file;     // overrides the tokenizer's chat template
  size_t max_body_bytes = 32u << 20;  // larger bodies are answered 413
  int http_threads = 128;             // connections served at once (a streaming request holds one)
  int32_t max_output_tokens = 32768;  // output budget of requests that give none
  std::string reasoning_parser = "auto";  // auto (from the template: qwen3 <think>) or off
  std::string tool_call_parser = "auto";  // auto (from the template: qwen3 <tool_call>) or off
  MediaPolicy media;
  EngineOptions engine;
};

}  // namespace ft::server
