#!/usr/bin/env python3
"""Where the seconds of an eval go: a logging proxy in front of a model server, and a summary.

    python3 bench/llm_trace.py proxy PORT LOG [--upstream http://127.0.0.1:8088]
    python3 bench/llm_trace.py summary LOG

`proxy` forwards every request to the upstream OpenAI-compatible server and appends one JSON
line per chat request to LOG: the request, the response and the wall time. Point
`provider.base_url` at `http://127.0.0.1:PORT/v1` and run `routines eval`. The log holds every
prompt and reply in full and no header (the `authorization` header is passed on, not logged).

`summary` prints, per kind of request the engine makes, how many there were, the prompt tokens
the server processed (the rest came from its prompt cache) and the milliseconds it spent
reading prompts and writing replies, from llama-server's `timings` (a server without them
counts the wall time as writing). Kinds, told apart by what the engine sends:
  first         a turn's first request (system prompt and the task)
  continuation  a turn's later requests (tool results appended; cached prefix)
  evidence      the answer asked from the evidence (its own short system prompt)
  review        the review of a silent reply
  code check    the function that checks a silent reply (its report counts as evidence)
It asserts nothing; it is the measurement behind bench/README.md's "where a task's seconds go".
"""
import argparse
import http.server
import json
import sys
import threading
import time
import urllib.error
import urllib.request


def kind(req):
    messages = req.get("messages") or []
    system = messages[0].get("content") or "" if messages and messages[0].get("role") == "system" else ""
    if system.startswith("You review"):
        return "review"
    if system.startswith("You write Python"):
        return "code check"
    if system.startswith("## Identity\nYou are Routines. Answer") or system.startswith("## Identity\n你是 Routines。根据"):
        return "evidence"
    return "first" if len(messages) <= 2 else "continuation"


def relay(handler, upstream, body=None):
    """Sends `handler`'s request on to `upstream` (its content type set, its `authorization`
    header passed on for providers that need a key) and writes the answer back to the client.
    Returns the upstream status and body. Also used by prompt_ablation.py."""
    req = urllib.request.Request(upstream + handler.path, data=body, method=handler.command)
    req.add_header("content-type", "application/json")
    if handler.headers.get("authorization"):
        req.add_header("authorization", handler.headers["authorization"])
    try:
        with urllib.request.urlopen(req, timeout=900) as r:
            status, data = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, data = e.code, e.read()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
    return status, data


def serve(port, log, upstream):
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def forward(self, body=None):
            started = time.time()
            status, data = relay(self, upstream, body)
            if body is not None and self.path.endswith("/chat/completions"):
                try:
                    entry = {"t": started, "wall_s": time.time() - started, "status": status,
                             "req": json.loads(body), "resp": json.loads(data)}
                except ValueError:
                    entry = None
                if entry:
                    with lock, open(log, "a") as f:
                        f.write(json.dumps(entry, ensure_ascii=False) + "\n")

        def do_GET(self):
            self.forward()

        def do_POST(self):
            self.forward(self.rfile.read(int(self.headers.get("content-length", 0))))

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"http://127.0.0.1:{server.server_address[1]}/v1 -> {upstream}", file=sys.stderr, flush=True)
    server.serve_forever()


def summary(log):
    rows = [json.loads(line) for line in open(log) if line.strip()]
    order = ["first", "continuation", "evidence", "review", "code check"]
    totals = {k: {"n": 0, "prompt": 0, "processed": 0, "read_ms": 0.0, "completion": 0, "write_ms": 0.0} for k in order}
    for row in rows:
        resp = row.get("resp") if isinstance(row.get("resp"), dict) else {}
        usage = resp.get("usage") or {}
        timings = resp.get("timings") or {}
        t = totals[kind(row["req"])]
        t["n"] += 1
        t["prompt"] += usage.get("prompt_tokens", 0)
        t["completion"] += usage.get("completion_tokens", 0)
        t["processed"] += timings.get("prompt_n", usage.get("prompt_tokens", 0))
        t["read_ms"] += timings.get("prompt_ms", 0.0)
        t["write_ms"] += timings.get("predicted_ms", 0.0 if timings else row.get("wall_s", 0) * 1000)
    print(f"{'kind':<13} {'requests':>8} {'prompt tok':>10} {'processed':>9} {'read s':>7} {'completion':>10} {'write s':>8}")
    all_t = {k: 0 for k in ("n", "prompt", "processed", "read_ms", "completion", "write_ms")}
    for k in order:
        t = totals[k]
        for f in all_t:
            all_t[f] += t[f]
        print(f"{k:<13} {t['n']:>8} {t['prompt']:>10} {t['processed']:>9} {t['read_ms'] / 1000:>7.1f} "
              f"{t['completion']:>10} {t['write_ms'] / 1000:>8.1f}")
    t = all_t
    print(f"{'all':<13} {t['n']:>8} {t['prompt']:>10} {t['processed']:>9} {t['read_ms'] / 1000:>7.1f} "
          f"{t['completion']:>10} {t['write_ms'] / 1000:>8.1f}")
    if t["read_ms"] and t["write_ms"]:
        print(f"prompt reading {1000 * t['processed'] / t['read_ms']:.0f} tokens/s, "
              f"writing {1000 * t['completion'] / t['write_ms']:.1f} tokens/s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("proxy")
    p.add_argument("port", type=int)
    p.add_argument("log")
    p.add_argument("--upstream", default="http://127.0.0.1:8088")
    s = sub.add_parser("summary")
    s.add_argument("log")
    a = ap.parse_args()
    if a.cmd == "proxy":
        serve(a.port, a.log, a.upstream.rstrip("/"))
    else:
        summary(a.log)


if __name__ == "__main__":
    main()
