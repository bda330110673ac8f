// The architecture registry and load_model.
#include "model/registry.h"

#include <map>

#include "core/log.h"
#include "io/safetensors_archive.h"

namespace ft {
namespace {
std::map<std::string, ModelFactory>& factories() {
  static std::map<std::string, ModelFactory> f;
  return f;
}

void register_all() {
  static const bool done = [] {
    register_qwen3_architectures();
    register_qwen3_5_moe_architectures();
    register_deepseek_v3_architectures();
    register_gpt_oss_architectures();
    return true;
  }();
  (void)done;
}
}  // namespace

void register_architecture(const std::string& name, ModelFactory factory) { factories()[name] = std::move(factory); }

std::vector<std::string> registered_architectures() {
  register_all();
  std::vector<std::string> names;
  for (const auto& [name, f] : factories()) names.push_back(name);
  return names;
}

Result<std::unique_ptr<Model>> load_model(const std::string& dir, Backend& backend, const ModelOptions& options) {
  register_all();
  FT_ASSIGN_OR_RETURN(ModelConfig config, load_model_config(dir));
  auto it = factories().find(config.architecture);
  if (it == factories().end()) {
    std::string known;
    for (const auto& n : registered_architectures()) known += (known.empty() ? "" : ", ") + n;
    return unsupported(dir + "/config.json: architecture '" + config.architecture + "' is not supported (known: " +
                       known + ")");
  }
  FT_ASSIGN_OR_RETURN(SafetensorsArchive checkpoint, SafetensorsArchive::open_dir(dir));
  return it->second(config, checkpoint, backend, options);
}

}  // namespace ft
