#!/usr/bin/env python3
"""Does each section of the system prompt earn its place on a small model? (issue 14, item 6)

Runs `routines eval SUITE --json` once per variant against a real OpenAI-compatible model
(default: `scripts/local-model.sh` on 127.0.0.1:8088), through a proxy in this process
that removes one section (`## Name` up to the next `## ` heading) from the system message of
every chat request. Sections are named as in the prompt, lower case, without `##`:
identity, tools, safety, memory, environment, decision principles, language, routine execution.

It prints, per variant: tasks passed, pass rate, median seconds per task, prompt tokens of
the suite, and which tasks changed result against the full prompt. Before the runs it prints
how many tokens each section of a sample routine prompt costs (the model server's
`/tokenize`, when it has one). It asserts nothing; one pass of the 25-task suite takes
25 to 70 minutes on a 2-core machine, so pick variants with --variants and tasks with --only.

Usage: python3 bench/prompt_ablation.py [--binary PATH] [--model-url URL] [--model NAME]
           [--suite DIR] [--variants full,-safety,-decision principles] [--only a,b,c]
"""
import argparse
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.request

from llm_trace import relay

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADING = re.compile(r"^## (.+)$", re.M)


def split_sections(prompt):
    """[(name, text)] of a system prompt, the text including its heading."""
    marks = [(m.start(), m.group(1).strip().lower()) for m in HEADING.finditer(prompt)]
    out = []
    for i, (start, name) in enumerate(marks):
        end = marks[i + 1][0] if i + 1 < len(marks) else len(prompt)
        out.append((name, prompt[start:end]))
    return out


def without(prompt, section):
    return "".join(text for name, text in split_sections(prompt) if name != section)


class Proxy(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream):
        super().__init__(("127.0.0.1", 0), Handler)
        self.upstream = upstream.rstrip("/")
        self.drop = None
        self.samples = []


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def forward(self, body=None):
        relay(self, self.server.upstream, body)

    def do_GET(self):
        self.forward()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        try:
            req = json.loads(body)
            for m in req.get("messages", []):
                if m.get("role") == "system" and isinstance(m.get("content"), str) and "## Identity" in m["content"]:
                    if len(self.server.samples) < 1 and "## Routine execution" in m["content"]:
                        self.server.samples.append(m["content"])
                    if self.server.drop:
                        m["content"] = without(m["content"], self.server.drop)
            body = json.dumps(req).encode()
        except ValueError:
            pass
        self.forward(body)


def tokens(model_root, text):
    try:
        req = urllib.request.Request(model_root + "/tokenize", data=json.dumps({"content": text}).encode())
        req.add_header("content-type", "application/json")
        with urllib.request.urlopen(req, timeout=60) as r:
            return len(json.loads(r.read())["tokens"])
    except Exception:  # noqa: BLE001 - a server without /tokenize: characters / 4
        return None


def run_eval(binary, suite, proxy_url, model, only, tmp):
    cfg = os.path.join(tmp, "routines.yaml")
    with open(cfg, "w") as f:
        f.write(f"provider:\n  base_url: {proxy_url}/v1\n  model: {model}\n  temperature: 0\n  timeout: 600s\n")
    suite_dir = suite
    if only:
        suite_dir = os.path.join(tmp, "suite")
        shutil.rmtree(suite_dir, ignore_errors=True)
        os.makedirs(suite_dir)
        for name in only:
            shutil.copytree(os.path.join(suite, name), os.path.join(suite_dir, name))
    env = dict(os.environ, ROUTINES_CONFIG=cfg)
    out = subprocess.run([binary, "eval", suite_dir, "--json"], env=env, capture_output=True, text=True)
    if not out.stdout.strip():
        sys.exit(f"eval printed nothing:\n{out.stderr}")
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/routines"))
    ap.add_argument("--model-url", default="http://127.0.0.1:8088")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--suite", default=os.path.join(ROOT, "evals"))
    ap.add_argument("--variants", default="full,-decision principles,-safety,-identity")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    only = [t for t in a.only.split(",") if t]

    proxy = Proxy(a.model_url)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    proxy_url = f"http://127.0.0.1:{proxy.server_address[1]}"

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for variant in a.variants.split(","):
            proxy.drop = variant[1:].strip().lower() if variant.startswith("-") else None
            print(f"variant {variant}: running the suite...", file=sys.stderr, flush=True)
            results[variant] = run_eval(a.binary, a.suite, proxy_url, a.model, only, tmp)
            if proxy.samples and len(results) == 1:
                sample = proxy.samples[0]
                print("tokens per section of a routine prompt (first one seen):")
                total = tokens(a.model_url, sample)
                for name, text in split_sections(sample):
                    n = tokens(a.model_url, text)
                    print(f"  {name:<22} {n if n is not None else len(text) // 4:>5}")
                print(f"  {'whole prompt':<22} {total if total is not None else len(sample) // 4:>5}")
    base = next(iter(results.values()))
    base_pass = {t["name"]: t["passed"] for t in base["tasks"]}
    print(f"{'variant':<26} {'passed':>7} {'rate':>6} {'median s':>9} {'prompt tok':>11}  changed against the first")
    for variant, r in results.items():
        changed = [
            ("+" if t["passed"] else "-") + t["name"]
            for t in r["tasks"]
            if t["passed"] != base_pass.get(t["name"], t["passed"])
        ]
        print(
            f"{variant:<26} {r['passed']:>3}/{r['total']:<3} {100 * r['pass_rate']:>5.0f}% {r['median_seconds']:>9.1f} "
            f"{r['prompt_tokens']:>11}  {' '.join(changed)}"
        )


if __name__ == "__main__":
    main()
