// The flags of `ft serve` (also taken by `ft shell --model`) -> ServerOptions; the engine's among them (also taken by
// `ft bench engine`) -> EngineOptions.
#pragma once

#include "cli/args.h"
#include "server/server_options.h"

namespace ft::cli {

// The engine's flags but --model.
void add_engine_flags(Args& args);
Result<EngineOptions> engine_options(const Args& args);

// `model_required`: ft serve needs --model; ft shell takes it optionally.
void add_serve_flags(Args& args, bool model_required);
Result<server::ServerOptions> serve_options(const Args& args);

}  // namespace ft::cli
