// ft tokenize: prints the token ids of a text (or of each line of a JSONL file) as JSON arrays.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "tokenizer/tokenizer.h"

namespace ft::cli {
namespace {

// One output line: the ids as a JSON array, or with --json an object with ids and token strings.
std::string render(const tok::Tokenizer& tokenizer, const std::string& text, bool as_object) {
  const std::vector<int32_t> ids = tokenizer.encode(text, false);
  if (!as_object) return nlohmann::json(ids).dump();
  nlohmann::json tokens = nlohmann::json::array();
  for (int32_t id : ids) tokens.push_back(tokenizer.id_to_token(id));
  return nlohmann::json{{"ids", ids}, {"tokens", tokens}}.dump(-1, ' ', false,
                                                               nlohmann::json::error_handler_t::replace);
}

Status tokenize_jsonl(const tok::Tokenizer& tokenizer, const std::string& path, bool as_object) {
  std::ifstream in(path);
  if (!in) return not_found("cannot open " + path);
  std::string line, out;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      return invalid_argument(path + ":" + std::to_string(n) + ": not JSON: " + e.what());
    }
    if (!value.is_string()) return invalid_argument(path + ":" + std::to_string(n) + ": not a JSON string");
    out = render(tokenizer, value.get<std::string>(), as_object);
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  return ok_status();
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  Args args("tokenize",
            "Prints the token ids of a text as a JSON array (special-token text is matched as special tokens; "
            "no BOS is added).");
  args.required("tokenizer", "DIR", "folder with tokenizer.json (and tokenizer_config.json)");
  args.flag("text", "S", "the text to tokenize");
  args.flag("jsonl", "FILE", "one JSON string per line; prints one JSON array of ids per line");
  args.flag("json", "", "print {\"ids\": [...], \"tokens\": [...]} objects instead of bare id arrays");
  Status st = args.parse(argc, argv);
  if (!st.ok()) return report_error("tokenize", st);
  if (args.has("text") == args.has("jsonl"))
    return report_error("tokenize", invalid_argument("give exactly one of --text and --jsonl"));
  auto tokenizer = tok::Tokenizer::load(args.str("tokenizer"));
  if (!tokenizer.ok()) return report_error("tokenize", tokenizer.status());
  if (args.has("jsonl")) {
    st = tokenize_jsonl(*tokenizer.value(), args.str("jsonl"), args.on("json"));
    if (!st.ok()) return report_error("tokenize", st);
  } else {
    std::printf("%s\n", render(*tokenizer.value(), args.str("text"), args.on("json")).c_str());
  }
  return 0;
}

}  // namespace ft::cli
