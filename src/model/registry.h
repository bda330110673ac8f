// Architecture registry: config.json `architectures[0]` -> a loader for that model.
// Registration is explicit (no static initialisers, which a static library would drop).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/model.h"

namespace ft {

class SafetensorsArchive;

using ModelFactory = std::function<Result<std::unique_ptr<Model>>(const ModelConfig&, const SafetensorsArchive&,
                                                                  Backend&, const ModelOptions&)>;

void register_architecture(const std::string& name, ModelFactory factory);
std::vector<std::string> registered_architectures();

// One per architecture file (src/model/arch/), called once by the registry.
void register_qwen3_architectures();
void register_qwen3_5_moe_architectures();
void register_deepseek_v3_architectures();
void register_gpt_oss_architectures();

}  // namespace ft
