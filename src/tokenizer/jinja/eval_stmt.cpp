// Jinja statement execution: output, if, for (loop variable, filters, else, break/continue), set, macros,
// call blocks, filter blocks and scoped bodies.
#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/evaluator.h"

namespace ft::tok::jinja {

extern const char* const kCapturedBody;

namespace {
constexpr int kMaxMacroDepth = 200;

ScopePtr child(const ScopePtr& parent) {
  auto s = std::make_shared<Scope>();
  s->parent = parent;
  return s;
}
}  // namespace

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return &it->second;
  }
  return nullptr;
}

Evaluator::Evaluator(const Value& context) {
  auto globals = std::make_shared<Scope>();
  for (auto& [k, v] : make_globals().items) globals->vars[k] = v;
  auto vars = child(globals);
  if (context.is_dict())
    for (const auto& [k, v] : context.dict->items) vars->vars[k] = v;
  root_ = child(vars);
}

Status Evaluator::render(const Body& body, std::string& out) { return exec(body, root_, out); }

Status Evaluator::exec(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const auto& s : body) {
    FT_RETURN_IF_ERROR(exec_stmt(*s, scope, out));
    if (flow_ != Flow::kNormal) return ok_status();
  }
  return ok_status();
}

Status Evaluator::assign(const Target& target, Value value, const ScopePtr& scope, int line) {
  if (!target.attr.empty()) {
    const Value* ns = scope->find(target.names[0]);
    if (!ns || ns->kind != Kind::kNamespace)
      return at_line(line, invalid_argument("cannot assign attribute on non-namespace object"));
    ns->dict->set(target.attr, std::move(value));
    return ok_status();
  }
  if (target.names.size() == 1) {
    scope->vars[target.names[0]] = std::move(value);
    return ok_status();
  }
  auto items = iterate(value);
  if (!items.ok()) return at_line(line, items.status());
  if (items->size() != target.names.size())
    return at_line(line, invalid_argument("cannot unpack " + std::to_string(items->size()) + " values into " +
                                          std::to_string(target.names.size())));
  for (size_t i = 0; i < target.names.size(); ++i) scope->vars[target.names[i]] = (*items)[i];
  return ok_status();
}

Status Evaluator::exec_stmt(const Stmt& s, const ScopePtr& scope, std::string& out) {
  using T = Stmt::Type;
  switch (s.type) {
    case T::kText: out += s.text; return ok_status();
    case T::kOutput: {
      FT_ASSIGN_OR_RETURN(Value v, eval(*s.expr, scope));
      out += to_str(v);
      return ok_status();
    }
    case T::kIf:
      for (const auto& [cond, body] : s.branches) {
        bool take = true;
        if (cond) {
          FT_ASSIGN_OR_RETURN(Value c, eval(*cond, scope));
          take = c.truthy();
        }
        if (take) return exec(body, scope, out);
      }
      return ok_status();
    case T::kFor: return exec_for(s, scope, out);
    case T::kSet: {
      FT_ASSIGN_OR_RETURN(Value v, eval(*s.expr, scope));
      return assign(s.target, std::move(v), scope, s.line);
    }
    case T::kSetBlock:
    case T::kFilterBlock: {
      std::string captured;
      auto inner = child(scope);
      FT_RETURN_IF_ERROR(exec(s.body, inner, captured));
      inner->vars[kCapturedBody] = Value::from_string(std::move(captured));
      FT_ASSIGN_OR_RETURN(Value v, eval(*s.expr, inner));
      if (s.type == T::kFilterBlock) {
        out += to_str(v);
        return ok_status();
      }
      return assign(s.target, std::move(v), scope, s.line);
    }
    case T::kMacro: scope->vars[s.name] = make_macro(s, scope); return ok_status();
    case T::kCallBlock: {
      FT_ASSIGN_OR_RETURN(Value v, eval_call_block(s, scope));
      out += to_str(v);
      return ok_status();
    }
    case T::kBreak: flow_ = Flow::kBreak; return ok_status();
    case T::kContinue: flow_ = Flow::kContinue; return ok_status();
    case T::kScope: {
      auto inner = child(scope);
      for (const auto& [target, expr] : s.assignments) {
        FT_ASSIGN_OR_RETURN(Value v, eval(*expr, scope));
        FT_RETURN_IF_ERROR(assign(target, std::move(v), inner, s.line));
      }
      return exec(s.body, s.assignments.empty() ? scope : inner, out);
    }
  }
  return internal_error("unknown statement");
}

Status Evaluator::exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
  FT_ASSIGN_OR_RETURN(Value seq, eval(*s.expr, scope));
  auto all = iterate(seq);
  if (!all.ok()) return at_line(s.line, all.status());
  List items;
  if (s.cond) {  // `for x in xs if cond`: filter first, so loop.length counts what is kept
    for (const Value& item : *all) {
      auto probe = child(scope);
      FT_RETURN_IF_ERROR(assign(s.target, item, probe, s.line));
      FT_ASSIGN_OR_RETURN(Value keep, eval(*s.cond, probe));
      if (keep.truthy()) items.push_back(item);
    }
  } else {
    items = std::move(*all);
  }
  if (items.empty()) return exec(s.else_body, child(scope), out);
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    auto body_scope = child(scope);
    Dict loop;
    loop.set("index0", Value::from_int(i));
    loop.set("index", Value::from_int(i + 1));
    loop.set("revindex0", Value::from_int(n - i - 1));
    loop.set("revindex", Value::from_int(n - i));
    loop.set("first", Value::from_bool(i == 0));
    loop.set("last", Value::from_bool(i == n - 1));
    loop.set("length", Value::from_int(n));
    loop.set("depth", Value::from_int(1));  // loops are never recursive here
    loop.set("depth0", Value::from_int(0));
    loop.set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item"));
    loop.set("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item"));
    loop.set("cycle", Value::from_function([i](const CallArgs& a) -> Result<Value> {
               if (a.positional.empty()) return invalid_argument("no items for cycling given");
               return a.positional[static_cast<size_t>(i) % a.positional.size()];
             }));
    body_scope->vars["loop"] = Value::namespace_of(std::move(loop));
    FT_RETURN_IF_ERROR(assign(s.target, items[static_cast<size_t>(i)], body_scope, s.line));
    FT_RETURN_IF_ERROR(exec(s.body, body_scope, out));
    if (flow_ == Flow::kBreak) {
      flow_ = Flow::kNormal;
      break;
    }
    flow_ = Flow::kNormal;
  }
  return ok_status();
}

Value Evaluator::make_macro(const Stmt& s, const ScopePtr& scope) {
  const Stmt* stmt = &s;
  std::weak_ptr<Scope> def_scope = scope;  // the macro lives in that scope: avoid a reference cycle
  return Value::from_function([this, stmt, def_scope](const CallArgs& args) -> Result<Value> {
    ScopePtr scope_now = def_scope.lock();
    return call_macro(*stmt, scope_now ? scope_now : root_, args);
  });
}

Result<Value> Evaluator::call_macro(const Stmt& s, const ScopePtr& def_scope, const CallArgs& args) {
  if (++depth_ > kMaxMacroDepth) {
    --depth_;
    return invalid_argument("macro recursion too deep");
  }
  auto scope = child(def_scope);
  Status st;
  if (args.positional.size() > s.params.size())
    st = invalid_argument("macro '" + s.name + "' takes not more than " + std::to_string(s.params.size()) +
                          " argument(s)");
  for (const auto& [k, v] : args.keyword) {
    bool known = k == "caller";
    for (const auto& p : s.params) known = known || p.name == k;
    if (!known) st = invalid_argument("macro '" + s.name + "' takes no keyword argument '" + k + "'");
    scope->vars[k] = v;
  }
  for (size_t i = 0; st.ok() && i < s.params.size(); ++i) {
    const MacroParam& p = s.params[i];
    if (i < args.positional.size()) {
      scope->vars[p.name] = args.positional[i];
    } else if (!args.kwarg(p.name)) {
      if (p.default_value) {
        auto v = eval(*p.default_value, scope);
        if (!v.ok()) st = v.status();
        else scope->vars[p.name] = v.value();
      } else {
        scope->vars[p.name] = Value::undefined("parameter '" + p.name + "' was not provided");
      }
    }
  }
  std::string out;
  if (st.ok()) st = exec(s.body, scope, out);
  --depth_;
  if (!st.ok()) return at_line(s.line, st);
  return Value::from_string(std::move(out));
}

Result<Value> Evaluator::eval_call_block(const Stmt& s, const ScopePtr& scope) {
  const Expr& call_expr = *s.expr;
  FT_ASSIGN_OR_RETURN(Value fn, eval(*call_expr.args[0], scope));
  CallArgs args;
  FT_RETURN_IF_ERROR(eval_args(call_expr, 1, scope, args));
  const Stmt* stmt = &s;
  args.keyword.emplace_back("caller", Value::from_function([this, stmt, scope](const CallArgs& a) -> Result<Value> {
                              auto inner = child(scope);
                              for (size_t i = 0; i < stmt->params.size(); ++i) {
                                const Value* v = a.arg(i, stmt->params[i].name);
                                if (v) inner->vars[stmt->params[i].name] = *v;
                                else if (stmt->params[i].default_value) {
                                  FT_ASSIGN_OR_RETURN(inner->vars[stmt->params[i].name],
                                                      eval(*stmt->params[i].default_value, inner));
                                } else {
                                  inner->vars[stmt->params[i].name] = Value::undefined("parameter '" + stmt->params[i].name + "' was not provided");
                                }
                              }
                              std::string out;
                              FT_RETURN_IF_ERROR(exec(stmt->body, inner, out));
                              return Value::from_string(std::move(out));
                            }));
  return call(fn, args, call_expr);
}

}  // namespace ft::tok::jinja
