// Runs the real `ft` binary and captures its exit code, stdout and stderr.
#pragma once

#include <string>

namespace ft::test {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `ft` with `args` (already shell-quoted) from the build directory.
CliResult run_ft(const std::string& args);
// Shell-quotes one argument.
std::string shell_quote(const std::string& s);

}  // namespace ft::test
