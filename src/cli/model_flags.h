// Flags shared by every command that loads a model (--model, --device, --dtype, --threads, ...).
#pragma once

#include "cli/args.h"
#include "engine/model_session.h"

namespace ft::cli {

void add_model_flags(Args& args);
Result<SessionOptions> session_options(const Args& args);
// --moe-strategy (or --moe-backend), --moe-cache-size, --moe-cache-rate, --kv-reserve-tokens, --moe-cpu-threads,
// --bw-profile (upstream FreeToken's names).
void add_moe_flags(Args& args);
Result<MoeOptions> moe_options(const Args& args);

}  // namespace ft::cli
