// Encode throughput of ft::tok::Tokenizer on one core: MB/s over a text file split into ~64 KB chunks.
// Usage: bench_tokenizer TOKENIZER_DIR TEXT_FILE [PASSES]   (make_text.js writes a multilingual TEXT_FILE)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "tokenizer/tokenizer.h"

namespace {

constexpr size_t kChunkBytes = 64 << 10;

// Splits text at line ends into chunks of about kChunkBytes (the same rule as bench_hf.js).
std::vector<std::string> chunks_of(const std::string& text) {
  std::vector<std::string> chunks;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', std::min(begin + kChunkBytes, text.size()));
    end = end == std::string::npos ? text.size() : end + 1;
    chunks.push_back(text.substr(begin, end - begin));
    begin = end;
  }
  return chunks;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_tokenizer TOKENIZER_DIR TEXT_FILE [PASSES]\n");
    return 2;
  }
  const int passes = argc > 3 ? std::atoi(argv[3]) : 3;
  auto tok = ft::tok::Tokenizer::load(argv[1]);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.status().to_string().c_str());
    return 1;
  }
  auto text = ft::read_text_file(argv[2]);
  if (!text.ok()) {
    std::fprintf(stderr, "%s\n", text.status().to_string().c_str());
    return 1;
  }
  const std::vector<std::string> chunks = chunks_of(text.value());
  const double mb = static_cast<double>(text.value().size()) / 1e6;
  for (int pass = 0; pass < passes; ++pass) {
    size_t n_tokens = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& c : chunks) n_tokens += tok.value()->encode(c, false).size();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("freetoken pass %d (%s): %.2f MB in %.3f s = %.2f MB/s, %zu tokens\n", pass,
                pass == 0 ? "cold cache" : "warm cache", mb, s, mb / s, n_tokens);
  }
  return 0;
}
