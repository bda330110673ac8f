#!/usr/bin/python3
# Reference renderer: real Jinja2 set up exactly as transformers' apply_chat_template sets it up
# (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, the {% generation %} tag, tojson with ensure_ascii=False,
# raise_exception, strftime_now), used to produce the expected outputs of our C++ renderer at test time.
#
# usage: render.py JOBS.json OUT.json
#   a job is {"template": SOURCE, "context": {...}}                 -> render SOURCE with context as is
#          or {"tokenizer_dir": DIR, "request": {...}}               -> apply_chat_template semantics:
#             messages (normalised as documented in src/tokenizer/chat_template.h), tools (None when absent),
#             documents=None, add_generation_prompt (False when absent), special tokens, other request keys.
#   each result is {"ok": true, "text": ...} or {"ok": false, "error": ...}.
import json
import os
import sys
from datetime import datetime

import jinja2.ext
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


class AssistantTracker(jinja2.ext.Extension):
    """transformers' {% generation %} tag; rendering only needs its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def is_content(node):
    if isinstance(node, (nodes.Name,)):
        return node.name == "content"
    if isinstance(node, nodes.Getattr):
        return node.attr == "content"
    if isinstance(node, nodes.Getitem):
        return isinstance(node.arg, nodes.Const) and node.arg.value == "content"
    return False


def template_traits(env, source):
    """The two facts the documented message normalisation depends on, read from Jinja2's own AST."""
    ast = env.parse(source)
    null_content = any(is_content(t.node) and t.name == "none" for t in ast.find_all(nodes.Test))
    parts = any(is_content(t.node) and t.name in ("string", "iterable", "sequence") for t in ast.find_all(nodes.Test))
    parts = parts or any(is_content(f.iter) for f in ast.find_all(nodes.For))
    return null_content, parts


def normalize(messages, null_content, parts):
    out = []
    for m in messages:
        m = dict(m)
        if "content" in m:
            c = m["content"]
            if c is None and not null_content:
                m["content"] = ""
            elif isinstance(c, list) and not parts:
                texts = []
                for p in c:
                    if not isinstance(p, dict) or p.get("type") != "text" or not isinstance(p.get("text"), str):
                        raise ValueError("content part not supported")
                    texts.append(p["text"])
                m["content"] = "\n".join(texts)
        out.append(m)
    return out


def load_tokenizer_dir(path):
    with open(os.path.join(path, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    jinja_file = os.path.join(path, "chat_template.jinja")
    if os.path.exists(jinja_file):
        with open(jinja_file, encoding="utf-8") as f:
            source = f.read()
    else:
        source = config["chat_template"]
        if isinstance(source, list):
            source = next(t["template"] for t in source if t["name"] == "default")
    special = {}
    for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
        tok = config.get(key)
        if isinstance(tok, dict):
            tok = tok.get("content")
        if tok is not None:
            special[key] = tok
    return source, special


def run_job(env, job, cache):
    if "template" in job:
        return env.from_string(job["template"]).render(**job["context"])
    path = job["tokenizer_dir"]
    if path not in cache:
        source, special = load_tokenizer_dir(path)
        cache[path] = (env.from_string(source), special, template_traits(env, source))
    template, special, traits = cache[path]
    request = job["request"]
    kwargs = {**special, **{k: v for k, v in request.items() if k not in ("messages", "tools", "add_generation_prompt")}}
    return template.render(messages=normalize(request["messages"], *traits), tools=request.get("tools"),
                           documents=None, add_generation_prompt=request.get("add_generation_prompt", False), **kwargs)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        jobs = json.load(f)
    env = make_env()
    cache = {}
    results = []
    for job in jobs:
        try:
            results.append({"ok": True, "text": run_job(env, job, cache)})
        except Exception as e:  # every failure is a result: our renderer must fail on the same inputs
            results.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
