// Jinja built-ins: attribute/item access with Python methods, filters, tests and global functions.
// Errors come back without a line; the evaluator adds the template line.
#pragma once

#include <string>

#include "freetoken/status.h"
#include "tokenizer/jinja/value.h"

namespace ft::tok::jinja {

// obj.name: dict key (after dict methods), str/dict/list methods, namespace attributes (methods.cpp).
Result<Value> get_attribute(const Value& obj, const std::string& name);
// obj[key]: dict key, list/str index (negative from the end); a missing entry is undefined (methods.cpp).
Result<Value> get_item(const Value& obj, const Value& key);
// obj[start:stop:step] on lists and strings; absent bounds are undefined values (methods.cpp).
Result<Value> get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// `item in container` (methods.cpp).
Result<bool> contains(const Value& container, const Value& item);

Result<Value> apply_filter(const std::string& name, const Value& input, const CallArgs& args);  // filters.cpp
Result<bool> apply_test(const std::string& name, const Value& input, const CallArgs& args);     // tests.cpp

// The globals transformers' environment exposes: range, namespace, dict, raise_exception, strftime_now.
Dict make_globals();  // globals.cpp

}  // namespace ft::tok::jinja
