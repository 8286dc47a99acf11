#!/usr/bin/env python3
"""Sends recorded model requests again with one thing changed, and says what changed.

    python3 bench/llm_replay.py TRACE.jsonl KIND VARIANT.py [--url http://127.0.0.1:8088]

TRACE.jsonl is a log of `llm_trace.py proxy`; KIND one of its request kinds (`first`,
`continuation`, `evidence`, `code check`, `review`); VARIANT.py a file that defines
`transform(request) -> request or None` (None: skip that request). For `first`, only the
requests that required a tool call (a routine turn's first) are sent. Each request is sent to
the model server as changed, and the line says SAME or DIFF (the text and the tool calls of the
recorded reply against the new one) with the prompt tokens of both; the last line counts them.
Send an unchanged variant first: at temperature 0 a server still differs now and then (the
cache), and that is the noise to read the rest against. Figures: bench/README.md, "Stop 46".
"""
import argparse
import importlib.util
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm_trace import kind  # noqa: E402


def post(url, body):
    request = urllib.request.Request(
        url + "/v1/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())


def reply(response):
    message = response["choices"][0]["message"]
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls") or []]
    return (message.get("content") or "").strip(), json.dumps(calls, ensure_ascii=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("kind")
    parser.add_argument("variant")
    parser.add_argument("--url", default="http://127.0.0.1:8088")
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("variant", args.variant)
    variant = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(variant)
    same = differ = saved = 0
    with open(args.trace, encoding="utf-8") as log:
        for line in log:
            record = json.loads(line)
            request = record["req"]
            if kind(request) != args.kind or (args.kind == "first" and request.get("tool_choice") != "required"):
                continue
            changed = variant.transform(json.loads(json.dumps(request)))
            if changed is None:
                continue
            before = reply(record["resp"])
            response = post(args.url, changed)
            after = reply(response)
            old, new = record["resp"]["usage"]["prompt_tokens"], response["usage"]["prompt_tokens"]
            saved += old - new
            if before == after:
                same += 1
                print("SAME", old, new)
            else:
                differ += 1
                task = request["messages"][-1].get("content") or ""
                print("DIFF", old, new, "\n   task:", task[-200:].replace("\n", " "))
                print("   old:", before, "\n   new:", after)
    print(f"same {same}, different {differ}, prompt tokens fewer {saved}")


if __name__ == "__main__":
    main()
