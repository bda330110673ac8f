#!/usr/bin/python3
# Writes tests/data/chat/conversations.json: chat requests (inputs only) that every template in
# tests/data/chat/ is rendered with, by real Jinja2 (render.py) and by our renderer, compared byte for byte.
# Combines system prompts, tools, tool calls (arguments as objects and as JSON strings), tool results,
# multi-turn history, reasoning_content / thinking, <think> in content, enable_thinking, reasoning_effort,
# null content, content-part arrays, multilingual text and emoji, add_generation_prompt true/false.
import itertools
import json
import os

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city. Ünïcödé: 天气 ☀️",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Zürich"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
        "days": {"type": "integer", "description": "Forecast days", "minimum": 1, "maximum": 7}},
        "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search_web", "description": "Search the web.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"},
        "filters": {"type": "array", "items": {"type": "string"}},
        "safe": {"type": "boolean"},
        "score": {"type": "number"}},
        "required": ["query", "filters"]}}}
NOARGS = {"type": "function", "function": {"name": "now", "description": "Current time.",
                                           "parameters": {"type": "object", "properties": {}}}}

SYSTEMS = [None, "You are a helpful assistant.", "Réponds en français.\nSois bref.  ", "  你是一个乐于助人的助手。 "]
USERS = ["Hi!", "What is a Mixture-of-Experts model?", "Écris un haïku sur la mer 🌊", "日本語で答えてください：なぜ空は青い？",
         "Line one\nLine two\n\n  indented\ttab", "Quote \"this\" and 'that' and \\backslash\\ {{ not jinja }} {% raw %}",
         "Emoji mix 👨‍👩‍👧‍👦 🇨🇭 ∑x² ≤ ∞", "  leading and trailing spaces  "]
ANSWERS = ["Hello! How can I help?", "An MoE routes each token to a few experts.\n\nIt saves compute.",
           "La mer respire —\nvagues d'argent sous la lune\nle sel sur les mains", "光が散乱するからです。"]
THOUGHTS = ["The user greets me.", "Let me think step by step.\nFirst, recall routing.", "日本語で考える。"]


def call(name, args, as_string, call_id):
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False) if as_string else args}}


def conversations():
    out = []
    # Plain multi-turn chats with and without a system prompt and history.
    for i, (system, n_turns) in enumerate(itertools.product(SYSTEMS, [1, 2, 3])):
        msgs = [{"role": "system", "content": system}] if system else []
        for t in range(n_turns):
            msgs.append({"role": "user", "content": USERS[(i + t) % len(USERS)]})
            if t + 1 < n_turns:
                msgs.append({"role": "assistant", "content": ANSWERS[(i + t) % len(ANSWERS)]})
        out.append({"messages": msgs, "add_generation_prompt": i % 2 == 0})
    # Reasoning in history: reasoning_content / thinking fields and <think> inside content.
    for j, thought in enumerate(THOUGHTS):
        msgs = [{"role": "user", "content": USERS[j]},
                {"role": "assistant", "content": ANSWERS[j], "reasoning_content": thought, "thinking": thought},
                {"role": "user", "content": USERS[j + 3]},
                {"role": "assistant", "content": "<think>\n" + thought + "\n</think>\n\n" + ANSWERS[j + 1]}]
        out.append({"messages": msgs, "add_generation_prompt": False})
        out.append({"messages": msgs + [{"role": "user", "content": "And?"}], "add_generation_prompt": True})
    # Tool use: definitions, single and parallel calls, arguments as objects or strings, results.
    for k, (as_string, parallel, system) in enumerate(itertools.product([False, True], [False, True], SYSTEMS[:2])):
        tools = [WEATHER, SEARCH, NOARGS]
        msgs = [{"role": "system", "content": system}] if system else []
        msgs.append({"role": "user", "content": "Weather in Zürich and news about MoE?"})
        calls = [call("get_weather", {"city": "Zürich", "unit": "celsius", "days": 3}, as_string, "call_1")]
        if parallel:
            calls.append(call("search_web", {"query": "MoE «news»", "filters": ["2024", "ai"], "safe": True,
                                             "score": 0.5}, as_string, "call_2"))
        msgs.append({"role": "assistant", "content": "" if k % 2 else "Let me check.", "tool_calls": calls})
        msgs.append({"role": "tool", "tool_call_id": "call_1", "name": "get_weather",
                     "content": json.dumps({"temp": 21.5, "sky": "☀️ sunny"}, ensure_ascii=False)})
        if parallel:
            msgs.append({"role": "tool", "tool_call_id": "call_2", "name": "search_web", "content": "No news today."})
        final = {"messages": msgs, "tools": tools, "add_generation_prompt": True}
        out.append(final)
        answered = msgs + [{"role": "assistant", "content": "It is 21.5 °C and sunny in Zürich."},
                           {"role": "user", "content": "Thanks! Now call `now`."}]
        out.append({"messages": answered, "tools": tools, "add_generation_prompt": True})
        out.append({"messages": answered[:-1], "tools": tools, "add_generation_prompt": False})
    # Chat-template kwargs.
    base = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]
    for flag in [True, False]:
        out.append({"messages": base, "add_generation_prompt": True, "enable_thinking": flag})
        out.append({"messages": base + [{"role": "assistant", "content": "4", "reasoning_content": "Easy."},
                                        {"role": "user", "content": "3+3?"}],
                    "add_generation_prompt": True, "enable_thinking": flag})
    for effort in ["low", "medium", "high"]:
        out.append({"messages": base, "add_generation_prompt": True, "reasoning_effort": effort})
    out.append({"messages": base, "add_generation_prompt": True, "builtin_tools": ["browser", "python"],
                "tools": [WEATHER]})
    out.append({"messages": base, "add_generation_prompt": True, "model_identity": "You are Tester."})
    # OpenAI shapes: content null next to tool calls, content-part arrays.
    out.append({"messages": [{"role": "user", "content": "Weather?"},
                             {"role": "assistant", "content": None,
                              "tool_calls": [call("get_weather", {"city": "Oslo"}, True, "c9")]},
                             {"role": "tool", "tool_call_id": "c9", "content": "cold"}],
                "tools": [WEATHER], "add_generation_prompt": True})
    out.append({"messages": [{"role": "system", "content": [{"type": "text", "text": "Sys part."}]},
                             {"role": "user", "content": [{"type": "text", "text": "Part one."},
                                                          {"type": "text", "text": "Part two ✓"}]}],
                "add_generation_prompt": True})
    return out


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "data", "chat", "conversations.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(conversations(), f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(path, len(conversations()))
