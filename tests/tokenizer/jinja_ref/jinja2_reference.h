// Test helper: runs real Jinja2 (render.py, set up as transformers sets it up) over a batch of jobs and
// returns its results, so expected outputs come from Jinja2 at test time.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace ft::test {

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// jobs: [{"template", "context"} | {"tokenizer_dir", "request"}] -> [{"ok", "text" | "error"}].
// Fails the test (empty result) when /usr/bin/python3 with jinja2 is not there.
inline nlohmann::ordered_json jinja2_render(const nlohmann::ordered_json& jobs) {
  const std::string dir = ::testing::TempDir();
  const std::string tag = std::to_string(::getpid());
  const std::string in = dir + "/jinja2_jobs_" + tag + ".json", out = dir + "/jinja2_out_" + tag + ".json";
  std::ofstream(in, std::ios::binary) << jobs.dump();
  const std::string script = std::string(FT_TEST_DATA) + "/../tokenizer/jinja_ref/render.py";
  const std::string cmd = "/usr/bin/python3 '" + script + "' '" + in + "' '" + out + "'";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << "reference renderer failed: " << cmd << " (needs Debian python3-jinja2)";
  if (rc != 0) return nlohmann::ordered_json::array();
  auto results = nlohmann::ordered_json::parse(read_file(out));
  std::remove(in.c_str());
  std::remove(out.c_str());
  return results;
}

// Where two strings first differ, with some context, for failure messages.
inline std::string first_difference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  size_t from = i > 40 ? i - 40 : 0;
  return "at byte " + std::to_string(i) + ":\n  ours:   " + nlohmann::json(a.substr(from, 80)).dump() +
         "\n  jinja2: " + nlohmann::json(b.substr(from, 80)).dump();
}

}  // namespace ft::test
