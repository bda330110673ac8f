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
#include "core/thread_pool.h"
#include "io/model_config.h"
#include "io/safetensors_writer.h"

namespace ft::cli {
namespace {

constexpr int64_t kChunk = int64_t{1} << 24;  // elements generated per parallel chunk

struct Spec {
  std::string name;
  std::vector<int64_t> shape;
  bool norm = false;  // norm weights: 1 + U(-0.1, 0.1); others: uniform with std 0.02
};

// The Hugging Face tensors of a Qwen3 / Qwen3-MoE checkpoint with config c.
std::vector<Spec> qwen3_tensors(const ModelConfig& c) {
  const int64_t d = c.hidden_size, hd = c.head_dim;
  std::vector<Spec> t = {{"model.embed_tokens.weight", {c.vocab_size, d}}};
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back({p + "input_layernorm.weight", {d}, true});
    t.push_back({p + "post_attention_layernorm.weight", {d}, true});
    t.push_back({p + "self_attn.q_proj.weight", {c.n_head * hd, d}});
    t.push_back({p + "self_attn.k_proj.weight", {c.n_kv_head * hd, d}});
    t.push_back({p + "self_attn.v_proj.weight", {c.n_kv_head * hd, d}});
    t.push_back({p + "self_attn.o_proj.weight", {d, c.n_head * hd}});
    if (c.attention_bias)
      for (const char* b : {"q", "k", "v"})
        t.push_back({p + "self_attn." + b + "_proj.bias", {(*b == 'q' ? c.n_head : c.n_kv_head) * hd}});
    t.push_back({p + "self_attn.q_norm.weight", {hd}, true});
    t.push_back({p + "self_attn.k_norm.weight", {hd}, true});
    if (c.is_moe_layer(l)) {
      t.push_back({p + "mlp.gate.weight", {c.n_expert, d}});
      for (int64_t e = 0; e < c.n_expert; ++e) {
        const std::string ep = p + "mlp.experts." + std::to_string(e) + ".";
        t.push_back({ep + "gate_proj.weight", {c.moe_intermediate_size, d}});
        t.push_back({ep + "up_proj.weight", {c.moe_intermediate_size, d}});
        t.push_back({ep + "down_proj.weight", {d, c.moe_intermediate_size}});
      }
    } else {
      t.push_back({p + "mlp.gate_proj.weight", {c.intermediate_size, d}});
      t.push_back({p + "mlp.up_proj.weight", {c.intermediate_size, d}});
      t.push_back({p + "mlp.down_proj.weight", {d, c.intermediate_size}});
    }
  }
  t.push_back({"model.norm.weight", {d}, true});
  if (!c.tie_word_embeddings) t.push_back({"lm_head.weight", {c.vocab_size, d}});
  return t;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Element i of tensor `id`: a function of (seed, id, i) only, so any thread count gives the same file.
float random_value(uint64_t seed, uint64_t id, uint64_t i, bool norm) {
  const uint64_t r = splitmix64(seed * 0x100000001b3ull ^ (id << 40) ^ i);
  const float u = static_cast<float>(r >> 40) * (2.0f / 16777216.0f) - 1.0f;  // U(-1, 1)
  return norm ? 1.0f + 0.1f * u : 0.02f * 1.7320508f * u;                     // std 0.02
}

Status make_model(const Args& a) {
  FT_ASSIGN_OR_RETURN(int64_t seed, a.integer("seed"));
  FT_ASSIGN_OR_RETURN(int64_t layers, a.integer("layers"));
  FT_ASSIGN_OR_RETURN(DType dtype, dtype_from_name(a.str("dtype")));
  if (dtype != DType::kBF16 && dtype != DType::kF32) return invalid_argument("flag --dtype must be bf16 or f32");
  std::ifstream in(a.str("config"));
  if (!in) return io_error("cannot read " + a.str("config"));
  std::stringstream text;
  text << in.rdbuf();
  auto json = nlohmann::ordered_json::parse(text.str(), nullptr, false);
  if (json.is_discarded() || !json.is_object()) return corrupt_file(a.str("config") + ": not a JSON object");
  if (layers < 0) return invalid_argument("flag --layers must be >= 0");
  if (layers > 0) {
    json["num_hidden_layers"] = layers;
    if (json.contains("layer_types") && json["layer_types"].is_array() &&
        static_cast<int64_t>(json["layer_types"].size()) > layers)
      json["layer_types"].erase(json["layer_types"].begin() + layers, json["layer_types"].end());
  }
  json["torch_dtype"] = dtype == DType::kBF16 ? "bfloat16" : "float32";
  FT_ASSIGN_OR_RETURN(ModelConfig config, parse_model_config(json.dump(), a.str("config")));
  if (config.architecture != "Qwen3ForCausalLM" && config.architecture != "Qwen3MoeForCausalLM")
    return unsupported("make-model writes Qwen3ForCausalLM and Qwen3MoeForCausalLM checkpoints, not " +
                       config.architecture);
  const std::filesystem::path out = a.str("out");
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return io_error("cannot create " + out.string() + ": " + ec.message());
  {
    std::ofstream cfg(out / "config.json");
    cfg << json.dump(2) << "\n";
    if (!cfg) return io_error("cannot write " + (out / "config.json").string());
  }
  const std::vector<Spec> specs = qwen3_tensors(config);
  SafetensorsWriter w((out / "model.safetensors").string());
  size_t total = 0;
  for (const Spec& s : specs) {
    FT_RETURN_IF_ERROR(w.add(s.name, dtype, s.shape));
    int64_t n = 1;
    for (int64_t v : s.shape) n *= v;
    total += dtype_bytes(dtype, static_cast<size_t>(n));
  }
  w.set_metadata("format", "pt");
  FT_RETURN_IF_ERROR(w.begin());
  ThreadPool pool;
  std::vector<unsigned char> buf(dtype_bytes(dtype, kChunk));
  for (size_t id = 0; id < specs.size(); ++id) {
    int64_t n = 1;
    for (int64_t v : specs[id].shape) n *= v;
    for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
      const int64_t len = std::min(kChunk, n - c0);
      pool.parallel_for(
          len,
          [&](int, int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; ++i) {
              const float v = random_value(static_cast<uint64_t>(seed), id, static_cast<uint64_t>(c0 + i), specs[id].norm);
              if (dtype == DType::kBF16) reinterpret_cast<uint16_t*>(buf.data())[i] = f32_to_bf16(v);
              else reinterpret_cast<float*>(buf.data())[i] = v;
            }
          },
          4096);
      FT_RETURN_IF_ERROR(w.write_bytes(buf.data(), dtype_bytes(dtype, static_cast<size_t>(len))));
    }
  }
  FT_RETURN_IF_ERROR(w.finish());
  std::printf("wrote %s: %zu tensors, %.2f GB (%s, %lld layers)\n", out.string().c_str(), specs.size(),
              static_cast<double>(total) / 1e9, config.architecture.c_str(), static_cast<long long>(config.n_layer));
  return ok_status();
}

}  // namespace

int cmd_make_model(int argc, char** argv) {
  Args a("make-model", "Writes a random checkpoint in Hugging Face format (Qwen3 / Qwen3-MoE), streamed to disk.");
  a.required("config", "FILE", "config.json to build the checkpoint for");
  a.required("out", "DIR", "output directory (config.json, model.safetensors)");
  a.flag("seed", "S", "random seed (the same seed writes the same file)", "0");
  a.flag("dtype", "TYPE", "weight dtype: bf16 or f32", "bf16");
  a.flag("layers", "N", "override num_hidden_layers (0 = the config's)", "0");
  Status st = a.parse(argc, argv);
  if (st.ok()) st = make_model(a);
  return st.ok() ? 0 : report_error("make-model", st);
}

}  // namespace ft::cli
