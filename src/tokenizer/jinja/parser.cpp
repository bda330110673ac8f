// Jinja statement parser: text, {{ output }}, if, for, set, macro, call, filter, with, generation, break/continue.
#include "tokenizer/jinja/parser.h"

#include <set>

#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/parser_state.h"

namespace ft::tok::jinja {

// The name a block's captured output is bound to while its filters run ({% filter %}, {% set x | f %}).
extern const char* const kCapturedBody;
const char* const kCapturedBody = "\x01body";

namespace {

class StatementParser {
 public:
  explicit StatementParser(std::vector<Token> tokens) : p_(std::move(tokens)) {}

  Result<Body> parse_all() {
    FT_ASSIGN_OR_RETURN(Body body, parse_body({}));
    if (p_.cur().type != TokenType::kEnd) return p_.error("unexpected '" + p_.cur().text + "'");
    return body;
  }

 private:
  static std::shared_ptr<Stmt> make(Stmt::Type type, int line) {
    auto s = std::make_shared<Stmt>();
    s->type = type;
    s->line = line;
    return s;
  }

  // Parses statements until a block tag whose keyword is in `ends` (left at that keyword) or the end.
  Result<Body> parse_body(const std::set<std::string>& ends) {
    Body body;
    while (true) {
      const Token& t = p_.cur();
      if (t.type == TokenType::kEnd) {
        if (!ends.empty()) return p_.error("unexpected end of template, expected one of: " + join(ends));
        return body;
      }
      if (t.type == TokenType::kText) {
        auto s = make(Stmt::Type::kText, t.line);
        s->text = t.text;
        body.push_back(s);
        p_.advance();
      } else if (t.type == TokenType::kVarBegin) {
        auto s = make(Stmt::Type::kOutput, t.line);
        p_.advance();
        FT_ASSIGN_OR_RETURN(s->expr, p_.parse_tuple());
        if (p_.cur().type != TokenType::kVarEnd) return p_.error("expected '}}', got '" + p_.cur().text + "'");
        p_.advance();
        body.push_back(s);
      } else if (t.type == TokenType::kBlockBegin) {
        p_.advance();
        if (p_.cur().type != TokenType::kName) return p_.error("expected a statement name");
        if (ends.count(p_.cur().text)) return body;
        FT_ASSIGN_OR_RETURN(auto stmt, parse_statement());
        body.push_back(stmt);
      } else {
        return p_.error("unexpected '" + t.text + "'");
      }
    }
  }

  static std::string join(const std::set<std::string>& s) {
    std::string out;
    for (const auto& x : s) {
      if (!out.empty()) out += ", ";
      out += x;
    }
    return out;
  }

  Status end_block() {
    if (p_.cur().type != TokenType::kBlockEnd) return p_.error("expected '%}', got '" + p_.cur().text + "'");
    p_.advance();
    return ok_status();
  }

  // At `{% NAME`, having already checked NAME is the end keyword: consumes NAME %}.
  Status close(const char* name) {
    if (!p_.skip_name(name)) return p_.error(std::string("expected '") + name + "'");
    return end_block();
  }

  Result<std::shared_ptr<const Stmt>> parse_statement() {
    std::string kw = p_.cur().text;
    int line = p_.cur().line;
    p_.advance();
    if (kw == "if") return parse_if(line);
    if (kw == "for") return parse_for(line);
    if (kw == "set") return parse_set(line);
    if (kw == "macro") return parse_macro(line);
    if (kw == "call") return parse_call(line);
    if (kw == "filter") return parse_filter(line);
    if (kw == "with") return parse_with(line);
    if (kw == "generation") {  // transformers' AssistantTracker tag: renders its body unchanged
      auto s = make(Stmt::Type::kScope, line);
      FT_RETURN_IF_ERROR(end_block());
      FT_ASSIGN_OR_RETURN(s->body, parse_body({"endgeneration"}));
      FT_RETURN_IF_ERROR(close("endgeneration"));
      return std::shared_ptr<const Stmt>(s);
    }
    if (kw == "break" || kw == "continue") {
      if (loop_depth_ == 0) return p_.error("'" + kw + "' outside of a loop");
      FT_RETURN_IF_ERROR(end_block());
      return std::shared_ptr<const Stmt>(make(kw == "break" ? Stmt::Type::kBreak : Stmt::Type::kContinue, line));
    }
    return invalid_argument("template line " + std::to_string(line) + ": unsupported tag '" + kw + "'");
  }

  Result<std::shared_ptr<const Stmt>> parse_if(int line) {
    auto s = make(Stmt::Type::kIf, line);
    FT_ASSIGN_OR_RETURN(ExprPtr cond, p_.parse_tuple());
    while (true) {
      FT_RETURN_IF_ERROR(end_block());
      FT_ASSIGN_OR_RETURN(Body body, parse_body({"elif", "else", "endif"}));
      s->branches.emplace_back(cond, std::move(body));
      if (p_.skip_name("elif")) {
        FT_ASSIGN_OR_RETURN(cond, p_.parse_tuple());
        continue;
      }
      if (p_.skip_name("else")) {
        FT_RETURN_IF_ERROR(end_block());
        FT_ASSIGN_OR_RETURN(Body else_body, parse_body({"endif"}));
        s->branches.emplace_back(nullptr, std::move(else_body));
      }
      FT_RETURN_IF_ERROR(close("endif"));
      return std::shared_ptr<const Stmt>(s);
    }
  }

  Result<std::shared_ptr<const Stmt>> parse_for(int line) {
    auto s = make(Stmt::Type::kFor, line);
    FT_ASSIGN_OR_RETURN(s->target, p_.parse_target());
    if (!s->target.attr.empty()) return p_.error("a for-loop target cannot be an attribute");
    if (!p_.skip_name("in")) return p_.error("expected 'in'");
    FT_ASSIGN_OR_RETURN(s->expr, p_.parse_tuple(false));
    if (p_.skip_name("if")) {
      FT_ASSIGN_OR_RETURN(s->cond, p_.parse_expression());
    }
    if (p_.is_name("recursive")) return p_.error("recursive loops are not supported");
    FT_RETURN_IF_ERROR(end_block());
    ++loop_depth_;
    FT_ASSIGN_OR_RETURN(s->body, parse_body({"else", "endfor"}));
    --loop_depth_;
    if (p_.skip_name("else")) {
      FT_RETURN_IF_ERROR(end_block());
      FT_ASSIGN_OR_RETURN(s->else_body, parse_body({"endfor"}));
    }
    FT_RETURN_IF_ERROR(close("endfor"));
    return std::shared_ptr<const Stmt>(s);
  }

  static std::shared_ptr<Expr> captured_body(int line) {
    auto e = std::make_shared<Expr>();
    e->type = Expr::Type::kName;
    e->line = line;
    e->name = kCapturedBody;
    return e;
  }

  Result<std::shared_ptr<const Stmt>> parse_set(int line) {
    FT_ASSIGN_OR_RETURN(Target target, p_.parse_target());
    if (p_.skip_op("=")) {
      auto s = make(Stmt::Type::kSet, line);
      s->target = std::move(target);
      FT_ASSIGN_OR_RETURN(s->expr, p_.parse_tuple());
      FT_RETURN_IF_ERROR(end_block());
      return std::shared_ptr<const Stmt>(s);
    }
    auto s = make(Stmt::Type::kSetBlock, line);
    s->target = std::move(target);
    FT_ASSIGN_OR_RETURN(s->expr, p_.parse_filters(captured_body(line)));
    FT_RETURN_IF_ERROR(end_block());
    FT_ASSIGN_OR_RETURN(s->body, parse_body({"endset"}));
    FT_RETURN_IF_ERROR(close("endset"));
    return std::shared_ptr<const Stmt>(s);
  }

  Status parse_params(std::vector<MacroParam>& params) {
    FT_RETURN_IF_ERROR(p_.expect_op("("));
    while (!p_.is_op(")")) {
      if (!params.empty()) FT_RETURN_IF_ERROR(p_.expect_op(","));
      MacroParam param;
      FT_ASSIGN_OR_RETURN(param.name, p_.expect_name());
      if (p_.skip_op("=")) {
        FT_ASSIGN_OR_RETURN(param.default_value, p_.parse_expression());
      }
      params.push_back(std::move(param));
    }
    p_.advance();
    return ok_status();
  }

  Result<std::shared_ptr<const Stmt>> parse_macro(int line) {
    auto s = make(Stmt::Type::kMacro, line);
    FT_ASSIGN_OR_RETURN(s->name, p_.expect_name());
    FT_RETURN_IF_ERROR(parse_params(s->params));
    FT_RETURN_IF_ERROR(end_block());
    int saved = loop_depth_;
    loop_depth_ = 0;
    FT_ASSIGN_OR_RETURN(s->body, parse_body({"endmacro"}));
    loop_depth_ = saved;
    FT_RETURN_IF_ERROR(close("endmacro"));
    return std::shared_ptr<const Stmt>(s);
  }

  Result<std::shared_ptr<const Stmt>> parse_call(int line) {
    auto s = make(Stmt::Type::kCallBlock, line);
    if (p_.is_op("(")) FT_RETURN_IF_ERROR(parse_params(s->params));
    FT_ASSIGN_OR_RETURN(s->expr, p_.parse_expression());
    if (s->expr->type != Expr::Type::kCall) return p_.error("expected a call after {% call %}");
    FT_RETURN_IF_ERROR(end_block());
    FT_ASSIGN_OR_RETURN(s->body, parse_body({"endcall"}));
    FT_RETURN_IF_ERROR(close("endcall"));
    return std::shared_ptr<const Stmt>(s);
  }

  Result<std::shared_ptr<const Stmt>> parse_filter(int line) {
    auto s = make(Stmt::Type::kFilterBlock, line);
    p_.skip_op("|");
    auto input = captured_body(line);
    auto first = std::make_shared<Expr>();
    first->type = Expr::Type::kFilter;
    first->line = line;
    FT_ASSIGN_OR_RETURN(first->name, p_.expect_name());
    first->args.push_back(input);
    if (p_.is_op("(")) FT_RETURN_IF_ERROR(p_.parse_call_args(*first));
    ExprPtr head = first;
    FT_ASSIGN_OR_RETURN(s->expr, p_.parse_filters(head));
    FT_RETURN_IF_ERROR(end_block());
    FT_ASSIGN_OR_RETURN(s->body, parse_body({"endfilter"}));
    FT_RETURN_IF_ERROR(close("endfilter"));
    return std::shared_ptr<const Stmt>(s);
  }

  Result<std::shared_ptr<const Stmt>> parse_with(int line) {
    auto s = make(Stmt::Type::kScope, line);
    while (p_.cur().type != TokenType::kBlockEnd) {
      if (!s->assignments.empty()) FT_RETURN_IF_ERROR(p_.expect_op(","));
      FT_ASSIGN_OR_RETURN(Target target, p_.parse_target());
      FT_RETURN_IF_ERROR(p_.expect_op("="));
      FT_ASSIGN_OR_RETURN(ExprPtr value, p_.parse_expression());
      s->assignments.emplace_back(std::move(target), value);
    }
    FT_RETURN_IF_ERROR(end_block());
    FT_ASSIGN_OR_RETURN(s->body, parse_body({"endwith"}));
    FT_RETURN_IF_ERROR(close("endwith"));
    return std::shared_ptr<const Stmt>(s);
  }

  ParserState p_;
  int loop_depth_ = 0;
};

}  // namespace

Result<Body> parse_template(const std::string& source) {
  FT_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source));
  return StatementParser(std::move(tokens)).parse_all();
}

}  // namespace ft::tok::jinja
