#!/usr/bin/python3
# `ft chat-template` end to end: for every template folder in tests/data/chat and every request in
# conversations.json, the binary's stdout must equal real Jinja2's render (render.py) byte for byte, and
# the binary must exit non-zero exactly where Jinja2 raises.
# usage: check_cli.py FT_BINARY tests/data/chat
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import render  # noqa: E402


def main():
    ft, data = sys.argv[1], sys.argv[2]
    with open(os.path.join(data, "conversations.json"), encoding="utf-8") as f:
        conversations = json.load(f)
    folders = sorted(d for d in os.listdir(data) if os.path.isdir(os.path.join(data, d)))
    env = render.make_env()
    cache = {}
    same = failed_both = bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        request_path = os.path.join(tmp, "request.json")
        for folder in folders:
            for i, request in enumerate(conversations):
                job = {"tokenizer_dir": os.path.join(data, folder), "request": request}
                try:
                    want = render.run_job(env, job, cache)
                except Exception:
                    want = None
                with open(request_path, "w", encoding="utf-8") as f:
                    json.dump(request, f, ensure_ascii=False)
                got = subprocess.run([ft, "chat-template", "--tokenizer", job["tokenizer_dir"], "--request",
                                      request_path], capture_output=True)
                if want is None and got.returncode != 0:
                    failed_both += 1
                elif want is not None and got.returncode == 0 and got.stdout == want.encode("utf-8"):
                    same += 1
                else:
                    bad += 1
                    if bad <= 10:
                        print(f"MISMATCH {folder} #{i}: rc={got.returncode} stderr={got.stderr[:200]!r}")
    print(f"{len(folders)} templates x {len(conversations)} requests: {same} identical, "
          f"{failed_both} rejected by both, {bad} mismatches")
    sys.exit(1 if bad or not same else 0)


if __name__ == "__main__":
    main()
