// ft bench sample (bench_sample.cpp): the sample op's time per call for common sampling settings.
#pragma once

#include "cli/args.h"

namespace ft::cli {

Status bench_sample(const Args& a);

}  // namespace ft::cli
