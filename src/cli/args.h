// Command-line flags: declare each flag with its help, parse, and get one-line errors naming the flag.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "freetoken/status.h"

namespace ft::cli {

class Args {
 public:
  Args(std::string command, std::string summary) : command_(std::move(command)), summary_(std::move(summary)) {}

  // Declarations: `name` without dashes; `value_name` empty for a boolean switch.
  void flag(const std::string& name, const std::string& value_name, const std::string& help,
            const std::string& default_value = "");
  void required(const std::string& name, const std::string& value_name, const std::string& help);
  void positional(const std::string& name, const std::string& help);  // an optional trailing argument

  // Parses argv[1..] (argv[0] is the command name). Prints help and returns kAborted on --help.
  Status parse(int argc, char** argv);
  std::string help() const;

  bool has(const std::string& name) const;   // given on the command line
  bool on(const std::string& name) const;    // a switch was given
  std::string str(const std::string& name) const;  // value or default
  Result<int64_t> integer(const std::string& name) const;
  // An integer within [lo, hi] (no upper bound by default), else an error naming the flag.
  Result<int64_t> integer(const std::string& name, int64_t lo, int64_t hi = std::numeric_limits<int64_t>::max()) const;
  Result<double> number(const std::string& name) const;
  Result<std::vector<int32_t>> int_list(const std::string& name) const;  // "1,2,3"
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  struct Flag {
    std::string name, value_name, help, default_value;
    bool is_required = false;
    bool given = false;
    std::string value;
  };
  const Flag* find(const std::string& name) const;
  Flag* find(const std::string& name);

  std::string command_, summary_;
  std::vector<Flag> flags_;
  std::vector<std::pair<std::string, std::string>> positional_help_;
  std::vector<std::string> positionals_;
};

// Parses a byte size: "24G", "512M", "1.5GiB", "1000000".
Result<uint64_t> parse_size(const std::string& text);

}  // namespace ft::cli
