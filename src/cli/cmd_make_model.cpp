// ft make-model: a random checkpoint in Hugging Face format (config.json + model.safetensors) at any size,
// generated in parallel chunks and streamed to disk tensor by tensor, never held whole in memory.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/make_model_specs.h"
#include "core/thread_pool.h"
#include "io/model_config.h"
#include "io/safetensors_writer.h"

namespace ft::cli {
namespace {

constexpr int64_t kChunk = int64_t{1} << 24;  // elements generated per parallel chunk

// --layers N: num_hidden_layers = N in the text model's config (text_config when nested), layer_types cut to N
// or repeated cyclically up to N.
void set_layers(nlohmann::ordered_json& json, int64_t layers) {
  auto& text = json.contains("text_config") && json["text_config"].is_object() ? json["text_config"] : json;
  text["num_hidden_layers"] = layers;
  auto it = text.find("layer_types");
  if (it == text.end() || !it->is_array() || it->empty()) return;
  auto types = *it;
  it->clear();
  for (int64_t l = 0; l < layers; ++l) it->push_back(types[static_cast<size_t>(l) % types.size()]);
}

Status make_model(const Args& a) {
  FT_ASSIGN_OR_RETURN(int64_t seed, a.integer("seed"));
  FT_ASSIGN_OR_RETURN(int64_t layers, a.integer("layers", 0));
  FT_ASSIGN_OR_RETURN(DType dtype, dtype_from_name(a.str("dtype")));
  if (dtype != DType::kBF16 && dtype != DType::kF32) return invalid_argument("flag --dtype must be bf16 or f32");
  std::ifstream in(a.str("config"));
  if (!in) return io_error("cannot read " + a.str("config"));
  std::stringstream text;
  text << in.rdbuf();
  auto json = nlohmann::ordered_json::parse(text.str(), nullptr, false);
  if (json.is_discarded() || !json.is_object()) return corrupt_file(a.str("config") + ": not a JSON object");
  if (layers > 0) set_layers(json, layers);
  json["torch_dtype"] = dtype == DType::kBF16 ? "bfloat16" : "float32";
  const bool mxfp4 = a.on("mxfp4-experts");
  if (mxfp4)  // as gpt-oss's official checkpoints say it
    json["quantization_config"] = {
        {"quant_method", "mxfp4"},
        {"modules_to_not_convert",
         {"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}}};
  FT_ASSIGN_OR_RETURN(ModelConfig config, parse_model_config(json.dump(), a.str("config")));
  FT_ASSIGN_OR_RETURN(const std::vector<TensorSpec> specs, checkpoint_tensors(config, mxfp4));
  const std::filesystem::path out = a.str("out");
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return io_error("cannot create " + out.string() + ": " + ec.message());
  {
    std::ofstream cfg(out / "config.json");
    cfg << json.dump(2) << "\n";
    if (!cfg) return io_error("cannot write " + (out / "config.json").string());
  }
  SafetensorsWriter w((out / "model.safetensors").string());
  size_t total = 0;
  const auto stored = [&](const TensorSpec& s) { return s.u8() ? DType::kU8 : dtype; };
  for (const TensorSpec& s : specs) {
    FT_RETURN_IF_ERROR(w.add(s.name, stored(s), s.shape));
    int64_t n = 1;
    for (int64_t v : s.shape) n *= v;
    total += dtype_bytes(stored(s), static_cast<size_t>(n));
  }
  w.set_metadata("format", "pt");
  FT_RETURN_IF_ERROR(w.begin());
  ThreadPool pool;
  std::vector<unsigned char> buf(dtype_bytes(dtype, kChunk));
  for (size_t id = 0; id < specs.size(); ++id) {
    int64_t n = 1;
    for (int64_t v : specs[id].shape) n *= v;
    const TensorSpec& spec = specs[id];
    for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
      const int64_t len = std::min(kChunk, n - c0);
      pool.parallel_for(
          len,
          [&](int, int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; ++i) {
              const auto at = static_cast<uint64_t>(c0 + i);
              if (spec.u8()) {
                buf[static_cast<size_t>(i)] = random_byte(static_cast<uint64_t>(seed), id, at, spec.init);
                continue;
              }
              const float v = random_value(static_cast<uint64_t>(seed), id, at, spec.init);
              if (dtype == DType::kBF16) reinterpret_cast<uint16_t*>(buf.data())[i] = f32_to_bf16(v);
              else reinterpret_cast<float*>(buf.data())[i] = v;
            }
          },
          4096);
      FT_RETURN_IF_ERROR(w.write_bytes(buf.data(), dtype_bytes(stored(spec), static_cast<size_t>(len))));
    }
  }
  FT_RETURN_IF_ERROR(w.finish());
  std::printf("wrote %s: %zu tensors, %.2f GB (%s, %lld layers)\n", out.string().c_str(), specs.size(),
              static_cast<double>(total) / 1e9, config.architecture.c_str(), static_cast<long long>(config.n_layer));
  return ok_status();
}

}  // namespace

int cmd_make_model(int argc, char** argv) {
  Args a("make-model",
         "Writes a random checkpoint in Hugging Face format (Qwen3, Qwen3-MoE, Qwen3.5/3.6-MoE, DeepSeek-V3, gpt-oss), "
         "streamed to disk.");
  a.required("config", "FILE", "config.json to build the checkpoint for");
  a.required("out", "DIR", "output directory (config.json, model.safetensors)");
  a.flag("seed", "S", "random seed (the same seed writes the same file)", "0");
  a.flag("dtype", "TYPE", "weight dtype: bf16 or f32", "bf16");
  a.flag("layers", "N", "override num_hidden_layers (0 = the config's)", "0");
  a.flag("mxfp4-experts", "", "gpt-oss: experts in MXFP4, as the official checkpoints ship them");
  Status st = a.parse(argc, argv);
  if (st.ok()) st = make_model(a);
  return st.ok() ? 0 : report_error("make-model", st);
}

}  // namespace ft::cli
