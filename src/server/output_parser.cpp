// OutputParser: chains the reasoning parser into the tool-call parser.
#include "server/output_parser.h"

namespace ft::server {

OutputParser::OutputParser(const OutputParserOptions& o) : reasoning_(o.reasoning), tools_(o.tools) {}

ParsedOutput OutputParser::push(std::string_view text) {
  ParsedOutput out;
  std::string content;
  reasoning_.push(text, out.reasoning, content);
  tools_.push(content, out.content, out.calls);
  return out;
}

ParsedOutput OutputParser::finish() {
  ParsedOutput out;
  std::string content;
  reasoning_.finish(out.reasoning, content);
  tools_.push(content, out.content, out.calls);
  tools_.finish(out.content, out.calls);
  return out;
}

}  // namespace ft::server
