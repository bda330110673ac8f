// Flag parsing and help rendering for every ft command.
#include "cli/args.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace ft::cli {

void Args::flag(const std::string& name, const std::string& value_name, const std::string& help,
                const std::string& default_value) {
  flags_.push_back({name, value_name, help, default_value});
}

void Args::required(const std::string& name, const std::string& value_name, const std::string& help) {
  flags_.push_back({name, value_name, help, ""});
  flags_.back().is_required = true;
}

void Args::positional(const std::string& name, const std::string& help) {
  positional_help_.emplace_back(name, help);
}

const Args::Flag* Args::find(const std::string& name) const {
  for (const auto& f : flags_)
    if (f.name == name) return &f;
  return nullptr;
}

Args::Flag* Args::find(const std::string& name) {
  for (auto& f : flags_)
    if (f.name == name) return &f;
  return nullptr;
}

Status Args::parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(help().c_str(), stdout);
      return {StatusCode::kAborted, "help"};
    }
    if (a.rfind("--", 0) != 0 || a.size() == 2) {
      if (positionals_.size() < positional_help_.size()) {
        positionals_.push_back(a);
        continue;
      }
      return invalid_argument("unexpected argument '" + a + "' (see ft " + command_ + " --help)");
    }
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    Flag* f = find(name);
    if (!f) return invalid_argument("unknown flag --" + name + " (see ft " + command_ + " --help)");
    if (f->value_name.empty()) {
      if (has_value) return invalid_argument("flag --" + name + " takes no value");
      f->given = true;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) return invalid_argument("flag --" + name + " needs a value " + f->value_name);
      value = argv[++i];
    }
    f->given = true;
    f->value = value;
  }
  for (const auto& f : flags_)
    if (f.is_required && !f.given) return invalid_argument("missing required flag --" + f.name);
  return ok_status();
}

std::string Args::help() const {
  std::ostringstream o;
  o << "usage: ft " << command_;
  for (const auto& f : flags_)
    if (f.is_required) o << " --" << f.name << " " << f.value_name;
  o << " [flags]";
  for (const auto& p : positional_help_) o << " [" << p.first << "]";
  o << "\n\n" << summary_ << "\n\nflags:\n";
  for (const auto& f : flags_) {
    std::string left = "  --" + f.name + (f.value_name.empty() ? "" : " " + f.value_name);
    if (left.size() < 30) left.resize(30, ' ');
    else left += "\n" + std::string(30, ' ');
    o << left << f.help;
    if (!f.default_value.empty()) o << " (default " << f.default_value << ")";
    if (f.is_required) o << " (required)";
    o << "\n";
  }
  for (const auto& p : positional_help_) {
    std::string left = "  " + p.first;
    left.resize(30, ' ');
    o << left << p.second << "\n";
  }
  o << "  --help                      print this help\n";
  return o.str();
}

bool Args::has(const std::string& name) const {
  const Flag* f = find(name);
  return f && f->given;
}

bool Args::on(const std::string& name) const { return has(name); }

std::string Args::str(const std::string& name) const {
  const Flag* f = find(name);
  if (!f) return "";
  return f->given ? f->value : f->default_value;
}

Result<int64_t> Args::integer(const std::string& name) const {
  std::string s = str(name);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE)
    return invalid_argument("flag --" + name + " wants an integer, got '" + s + "'");
  return static_cast<int64_t>(v);
}

Result<int64_t> Args::integer(const std::string& name, int64_t lo, int64_t hi) const {
  FT_ASSIGN_OR_RETURN(int64_t v, integer(name));
  if (v >= lo && v <= hi) return v;
  if (hi == std::numeric_limits<int64_t>::max())
    return invalid_argument("flag --" + name + " must be at least " + std::to_string(lo));
  return invalid_argument("flag --" + name + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

Result<double> Args::number(const std::string& name) const {
  std::string s = str(name);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0') return invalid_argument("flag --" + name + " wants a number, got '" + s + "'");
  return v;
}

Result<std::vector<int32_t>> Args::int_list(const std::string& name) const {
  std::vector<int32_t> out;
  std::string s = str(name);
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno == ERANGE || v < INT32_MIN || v > INT32_MAX)
      return invalid_argument("flag --" + name + " wants comma-separated integers, got '" + item + "'");
    out.push_back(static_cast<int32_t>(v));
  }
  if (out.empty()) return invalid_argument("flag --" + name + " is empty");
  return out;
}

Result<uint64_t> parse_size(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || v < 0) return invalid_argument("bad size '" + text + "'");
  std::string unit(end);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double mult = 1;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB") mult = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB") mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB") mult = 1024.0 * 1024 * 1024 * 1024;
  else return invalid_argument("bad size unit in '" + text + "'");
  return static_cast<uint64_t>(v * mult);
}

}  // namespace ft::cli
