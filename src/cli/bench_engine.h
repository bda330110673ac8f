// ft bench engine (bench_engine.cpp): decode throughput through the serving engine's step loop.
#pragma once

#include "cli/args.h"

namespace ft::cli {

Status bench_engine(const Args& a);

}  // namespace ft::cli
