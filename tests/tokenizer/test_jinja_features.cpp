// Jinja features one by one (whitespace control, loops, scoping, macros, filters, tests, methods, undefined
// semantics, errors), each rendered by our interpreter and by real Jinja2 configured as transformers
// configures it (tests/tokenizer/jinja_ref/render.py, run at test time). Outputs must be byte-identical;
// where Jinja2 raises, we must return an error.
#include <gtest/gtest.h>

#include "jinja_ref/jinja2_reference.h"
#include "tokenizer/chat_template.h"

namespace ft::tok {
namespace {

struct Case {
  const char* tmpl;
  const char* context = "{}";
};

const Case kCases[] = {
    // Whitespace control: trim_blocks, lstrip_blocks, '-' and '+' markers, comments, trailing newline.
    {"a\n  {% if true %}\n  b\n  {% endif %}\nc\n"},
    {"a  {%- if true -%}  b  {%- endif -%}  c"},
    {"x\n    {%+ if true %}y{% endif %}\n"},
    {"{% if true +%}\nkeep{% endif %}"},
    {"a {# comment #}\n  {#- trimmed -#}  b\n{# c #}\nd"},
    {"{{ 'x' }}\n{{- ' y' -}}\n  z\n\n"},
    {"  {{ 1 }}  {% if 1 %}\n  {{ 2 }}\n{% endif %}"},
    {"line\r\nnext\rlast\n"},
    {"{% raw %}{{ not evaluated }} {% if %}{% endraw %}!"},
    {"t\n  {%- raw -%}  r  {%- endraw %}\nu"},
    // Literals, operators, precedence.
    {"{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }}"},
    {"{{ 7 / 2 }} {{ 6 / 2 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1.5e-7 }} {{ 3.0 }} {{ 100000000000000000.0 }}"},
    {"{{ 'a' ~ 1 ~ none ~ true }} {{ 'ab' * 3 }} {{ [1] + [2, 3] }} {{ 'x' + 'y' }}"},
    {"{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ true == 1 }} {{ [1, 2] == [1, 2] }}"},
    {"{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ 'z' not in 'abc' }}"},
    {"{{ not 0 }} {{ 0 or 'x' }} {{ '' and 'y' }} {{ 1 and 2 }} {{ none or [] }} {{ not x is defined }}"},
    {"{{ 'yes' if 1 else 'no' }} {{ 'yes' if 0 else 'no' }}[{{ 'only' if false }}]"},
    {"{{ \"esc: \\n \\t \\\\ \\' \\\" \\u00e9 \\x41 \\d\" }}"},
    {"{{ 'con' 'cat' }} {{ -3 | abs }} {{ - 2 ** 2 }}"},
    {"{{ {'b': 1, 'a': [1, 'x', none, true, 2.5]} }} {{ ['it\\'s', \"q\\\"\"] }} {{ (1, 2) }}"},
    // Subscripts and slices.
    {"{{ xs[0] }} {{ xs[-1] }} {{ xs[1:3] }} {{ xs[::-1] }} {{ xs[::2] }} {{ xs[-2:] }} {{ xs[:-1] }} {{ xs[5:1:-2] }}",
     R"({"xs": [0, 1, 2, 3, 4, 5, 6]})"},
    {"{{ s[0] }} {{ s[-1] }} {{ s[::-1] }} {{ s[1:4] }} {{ s | length }}", R"({"s": "héllo😀"})"},
    {"[{{ xs[10] }}] {{ xs[10] is defined }} {{ d.missing is defined }} {{ d['k'] }} {{ d.k }}",
     R"({"xs": [1], "d": {"k": "v"}})"},
    // Loops: loop variables, else, filters, unpacking, nesting, break/continue, cycle.
    {"{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}"
     "{{ loop.last }}{{ loop.length }}|{% endfor %}",
     R"({"xs": ["a", "b", "c"]})"},
    {"{% for x in xs %}[{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}]{% endfor %}", R"({"xs": [1, 2, 3]})"},
    {"{% for x in xs if x > 1 %}{{ x }}{{ loop.length }}{% else %}none{% endfor %}", R"({"xs": [1, 2, 3]})"},
    {"{% for x in [] %}{{ x }}{% else %}empty{% endfor %}{% for x in undefined_var %}{{ x }}{% endfor %}"},
    {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
     R"({"d": {"z": 1, "a": 2, "m": 3}})"},
    {"{% for c in 'héy' %}{{ c }}-{% endfor %}"},
    {"{% for x in xs %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}"
     "{% endfor %}",
     R"({"xs": [1, 2, 3, 4, 5]})"},
    {"{% for x in xs %}{{ loop.cycle('odd', 'even') }}{% endfor %}", R"({"xs": [1, 2, 3]})"},
    {"{% for a in [1, 2] %}{% for b in [3, 4] %}{{ a }}{{ b }}{{ loop.index }}{{ loop.depth }} {% endfor %}{% endfor %}"},
    {"{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(1, 10, 3) %}{{ i }}{% endfor %}{{ range(5, 0, -2) | list }}"},
    // Scoping: set in loops does not leak, namespace does; set in if does.
    {"{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}"},
    {"{% set ns = namespace(t=0, s='') %}{% for i in [1, 2, 3] %}{% set ns.t = ns.t + i %}{% set ns.s = ns.s ~ i %}"
     "{% endfor %}{{ ns.t }} {{ ns.s }}"},
    {"{% if true %}{% set y = 5 %}{% endif %}{{ y }}{% set a, b = [1, 2] %}{{ a }}{{ b }}"},
    {"{% set block %}  inner {{ 1 + 1 }}  {% endset %}[{{ block }}]{% set t | upper | trim %} shout {% endset %}[{{ t }}]"},
    {"{% for i in [1, 2] %}{% if i == 1 %}{% set z = 'set' %}{% endif %}[{{ z }}]{% endfor %}"},
    {"{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]"},
    // Macros and call blocks.
    {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bo', '?') }}"
     " {{ greet(punct='.', name='Cy') }} [{{ greet() }}]"},
    {"{% set g = 'global' %}{% macro m() %}{{ g }}{% set g = 'local' %}{{ g }}{% endmacro %}{{ m() }}{{ g }}"},
    {"{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ 1 }}{% endcall %}"},
    {"{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}"
     "{% call(item) each([1, 2]) %}<{{ item }}>{% endcall %}"},
    {"{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(3) }}"},
    {"{% filter upper %}shout {{ 'it' }}{% endfilter %}"},
    {"{% generation %}gen{{ 1 }}{% endgeneration %}"},
    // Tests.
    {"{{ x is defined }} {{ x is undefined }} {{ none is none }} {{ 'a' is string }} {{ 1 is number }} {{ true is number }}"
     " {{ 1.5 is float }} {{ 1 is integer }} {{ true is integer }} {{ true is boolean }} {{ 1 is true }} {{ true is true }}"},
    {"{{ {} is mapping }} {{ [] is mapping }} {{ [] is iterable }} {{ 'a' is iterable }} {{ {} is iterable }} {{ 1 is iterable }}"
     " {{ x is iterable }} {{ 'a' is sequence }} {{ 3 is sequence }} {{ x is sequence }} {{ none is iterable }}"},
    {"{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 2 is equalto 2 }} {{ 2 is eq 3 }} {{ 1 is ne 2 }}"
     " {{ 1 is lt 2 }} {{ 2 is ge 2 }} {{ 'a' is in 'abc' }} {{ 1 is sameas true }} {{ 'abc' is lower }} {{ 'ABC' is upper }}"},
    {"{{ x is not defined }} {{ 1 is not string }} {{ f is callable }} {{ range is callable }}", R"({"f": 1})"},
    // Filters.
    {"[{{ '  pad  ' | trim }}] [{{ 'xxaxx' | trim('x') }}] {{ [1, 2] | length }} {{ 'héllo' | count }} {{ {'a': 1} | length }}"},
    {"{{ 'MiXed' | lower }} {{ 'MiXed' | upper }} {{ 'hello wORLD' | capitalize }} {{ 'hello wORLD-x (y' | title }}"
     " {{ 'straße' | upper }} {{ 'ÉCOLE' | lower }}"},
    {"{{ 'a-b-c' | replace('-', '+') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ [1, 'a', none] | join(', ') }} {{ 'abc' | join('.') }}"},
    {"{{ [3, 1, 2] | first }} {{ [3, 1, 2] | last }} {{ 'xyz' | first }} [{{ [] | first }}] {{ [3, 1, 2] | sort }}"
     " {{ ['b', 'A', 'c'] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} {{ [3, 1, 2] | reverse | list }} {{ 'abc' | reverse }}"},
    {"[{{ x | default('dflt') }}] [{{ '' | default('dflt') }}] [{{ '' | default('dflt', true) }}] [{{ none | d('n') }}]"},
    {"{{ d | items | list }} {{ d | dictsort }} {{ d | dictsort(reverse=true) }} {{ d | dictsort(by='value') }} {{ d | list }}",
     R"({"d": {"b": 2, "a": 3, "C": 1}})"},
    {"{{ xs | map(attribute='n') | list }} {{ xs | selectattr('ok') | map(attribute='n') | join }} "
     "{{ xs | rejectattr('ok') | list | length }} {{ xs | selectattr('n', 'equalto', 2) | list }} "
     "{{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3, 4] | reject('even') | list }} {{ ['a', 'B'] | map('upper') | list }}",
     R"({"xs": [{"n": 1, "ok": true}, {"n": 2, "ok": false}, {"n": 3, "ok": true}]})"},
    {"{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '2.5' | float }} {{ 2 | float }}"
     " {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 2.1 | round(0, 'ceil') }} {{ -3.5 | abs }}"},
    {"{{ [1, 2, 3] | sum }} {{ xs | sum(attribute='n') }} {{ [1, 1, 'a', 'A'] | unique | list }} {{ [3, 9, 2] | max }}"
     " {{ [3, 9, 2] | min }} {{ [1, 2, 3, 4, 5] | batch(2) | list }} {{ 'one two  three' | wordcount }}",
     R"({"xs": [{"n": 1}, {"n": 5}]})"},
    {"{{ '<a href=\"x\">&\\'</a>' | escape }} {{ '<b>' | safe }} {{ 1 | string }} {{ none | string }} {{ [1] | string }}"},
    {"[{{ 'a\\nb\\n\\nc' | indent }}] [{{ 'a\\nb' | indent(2, true) }}] [{{ 'a\\n\\nb' | indent('>', blank=true) }}]"
     " [{{ 'mid' | center(9) }}] [{{ 'ab' | center(5) }}]"},
    // tojson as transformers defines it.
    {"{{ v | tojson }}|{{ v | tojson(indent=2) }}|{{ v | tojson(separators=(',', ':')) }}|{{ v | tojson(sort_keys=true) }}"
     "|{{ v | tojson(ensure_ascii=true) }}|{{ [] | tojson(indent=2) }}|{{ {} | tojson(indent=4) }}",
     R"({"v": {"z": "é \"q\" \\ \n\t\u0001 😀 </script>", "a": [1, 2.5, true, null, {"x": []}], "n": -0.0001}})"},
    // String, dict and list methods.
    {"{{ s.startswith('ab') }} {{ s.endswith(('x', 'yz')) }} {{ s.split('b') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }}"
     " {{ 'a,b,c'.rsplit(',', 1) }} {{ ' x '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '  l'.lstrip() }}|{{ 'r\\n\\n'.rstrip('\\n') }}|",
     R"({"s": "abcxyz"})"},
    {"{{ 'aXbX'.replace('X', '-') }} {{ 'héllo'.find('l') }} {{ 'abc'.find('z') }} {{ 'banana'.count('an') }} {{ 'mIx'.upper() }}"
     " {{ 'mIx'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ '-'.join(['a', 'b']) }} {{ 'a\\nb'.splitlines() }}"
     " {{ '12'.isdigit() }} {{ 'ab'.isalpha() }}"},
    {"{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.items() | list }}",
     R"({"d": {"a": 1, "b": [2]}})"},
    {"{{ message.content.split('</think>')[-1].lstrip('\\n') }}", R"({"message": {"content": "<think>x</think>\n\nanswer"}})"},
    // Undefined semantics and errors.
    {"[{{ missing }}] [{{ obj.nope }}] [{{ missing | length }}] [{{ missing | lower }}] [{{ missing ~ 'x' }}]", R"({"obj": {}})"},
    {"{{ missing.attr }}"},
    {"{{ missing + 1 }}"},
    {"{{ missing() }}"},
    {"{{ 'x'.nomethod() }}"},
    {"{{ obj.nope.deeper }}", R"({"obj": {}})"},
    {"{{ 'a' + 1 }}"},
    {"{{ 1 < 'a' }}"},
    {"{{ raise_exception('custom failure') }}"},
    {"{% for x in none %}{% endfor %}"},
    {"{{ xs.append(1) }}", R"({"xs": []})"},
    {"{{ 1 | nosuchfilter }}"},
    {"{% if 1 %}unclosed"},
    {"{% include 'other' %}"},
    {"{{ x is nosuchtest }}"},
    {"{{ undefined_thing | tojson }}"},
};

TEST(JinjaFeatures, MatchRealJinja2) {
  nlohmann::ordered_json jobs = nlohmann::ordered_json::array();
  for (const Case& c : kCases) jobs.push_back({{"template", c.tmpl}, {"context", nlohmann::ordered_json::parse(c.context)}});
  auto expected = test::jinja2_render(jobs);
  ASSERT_EQ(expected.size(), jobs.size());
  int failures = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    auto tmpl = ChatTemplate::parse(kCases[i].tmpl);
    Result<std::string> got = tmpl.ok() ? tmpl->render(jobs[i]["context"]) : Result<std::string>(tmpl.status());
    const auto& want = expected[i];
    std::string why;
    if (!want["ok"].get<bool>()) {
      if (got.ok()) why = "Jinja2 raised " + want["error"].get<std::string>() + " but we rendered " + got.value();
    } else if (!got.ok()) {
      why = "we failed: " + got.status().message() + "; Jinja2 rendered " + want["text"].dump();
    } else if (got.value() != want["text"].get<std::string>()) {
      why = "differs " + test::first_difference(got.value(), want["text"].get<std::string>());
    }
    if (!why.empty() && ++failures <= 10) ADD_FAILURE() << "case " << i << " " << kCases[i].tmpl << "\n" << why;
  }
  EXPECT_EQ(failures, 0) << "of " << jobs.size() << " cases";
}

// An unsupported construct or a syntax error names the template line.
TEST(JinjaFeatures, ErrorsNameTheLine) {
  auto bad = ChatTemplate::parse("line 1\n{% if x %}\n{% include 'y' %}\n{% endif %}");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("template line 3"), std::string::npos) << bad.status().message();
  auto tmpl = ChatTemplate::parse("a\nb\n{{ raise_exception('boom') }}");
  ASSERT_TRUE(tmpl.ok());
  auto r = tmpl->render(nlohmann::ordered_json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("template line 3"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("boom"), std::string::npos);
}

}  // namespace
}  // namespace ft::tok
