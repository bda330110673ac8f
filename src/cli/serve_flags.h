// The flags of `ft serve` (also taken by `ft shell --model`) -> ServerOptions.
#pragma once

#include "cli/args.h"
#include "server/server_options.h"

namespace ft::cli {

// `model_required`: ft serve needs --model; ft shell takes it optionally.
void add_serve_flags(Args& args, bool model_required);
Result<server::ServerOptions> serve_options(const Args& args);

}  // namespace ft::cli
