#!/usr/bin/env python3
"""Whole-process benchmark of `routines run`.

Runs a routine that makes two tool calls (file_read, then file_list) against
an in-process, instant OpenAI-compatible server, 20 times, and prints the
median wall time and the peak resident memory of the `routines` process.
Targets: <= 30 ms wall and <= 15 MB peak RSS (median of 20 runs).

Usage: python3 bench/run_latency.py [--runs N] [--binary PATH]
(builds target/release/routines first unless --binary is given)
"""
import argparse
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIME = "/usr/bin/time"


class InstantModel(http.server.BaseHTTPRequestHandler):
    """Answers by how many tool results the conversation has: 0 -> file_read,
    1 -> file_list, then the final text; a request without tools (the engine
    asking for the answer from what the tools returned) gets the final text."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without this, Nagle and
    # delayed ACKs add 40 ms to every response on Linux.
    disable_nagle_algorithm = True

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        results = sum(1 for m in body["messages"] if m["role"] == "tool")
        if not body.get("tools"):
            msg = {"role": "assistant", "content": "ANSWER:\nThe notes say hello; the folder holds notes.md."}
            finish = "stop"
        elif results == 0:
            msg = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "file_read", "arguments": "{\"path\": \"notes.md\"}"}}]}
            finish = "tool_calls"
        elif results == 1:
            msg = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c2", "type": "function", "function": {"name": "file_list", "arguments": "{}"}}]}
            finish = "tool_calls"
        else:
            msg = {"role": "assistant", "content": "The notes say hello; the folder holds notes.md."}
            finish = "stop"
        out = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                          "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                          "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def peak_rss_mb(argv, cwd, env):
    """Peak resident memory of one run, in MB.

    Not os.wait4 on a child of this script: Linux keeps a process's peak
    RSS across exec, so a child forked from this ~20 MB Python process
    reports at least that much whatever it execs. GNU time forks from a
    small process; its %M is the peak of the command alone.
    """
    if not os.path.exists(TIME):
        sys.exit(f"{TIME} is needed to measure peak RSS (apt-get install time)")
    p = subprocess.run([TIME, "-f", "%M", *argv], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"run failed: {p.stderr}")
    return int(p.stderr.strip().splitlines()[-1]) / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--binary")
    args = ap.parse_args()
    binary = args.binary
    if not binary:
        subprocess.run(["cargo", "build", "--release", "--locked", "-q"], cwd=ROOT, check=True)
        binary = os.path.join(ROOT, "target", "release", "routines")
    binary = os.path.abspath(binary)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), InstantModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]

    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "routines.yaml"), "w") as f:
            f.write(f"provider:\n  base_url: http://127.0.0.1:{port}/v1\n  model: instant\n")
        os.makedirs(os.path.join(d, "routines"))
        with open(os.path.join(d, "routines", "bench.yaml"), "w") as f:
            f.write("prompt: Read notes.md, list the folder, then answer.\n"
                    "agent: { autonomy: read_only, tools: [file_read, file_list] }\n")
        with open(os.path.join(d, "notes.md"), "w") as f:
            f.write("# Notes\nhello\n")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": d}
        walls, rss = [], []
        for i in range(args.runs + 1):
            start = time.perf_counter()
            p = subprocess.run([binary, "run", "bench"], cwd=d, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
            wall = time.perf_counter() - start
            if p.returncode != 0:
                sys.exit(f"run {i} failed: {p.stderr.decode()}")
            if i == 0:
                continue  # warm-up: first open creates the database
            walls.append(wall * 1000)
            rss.append(peak_rss_mb([binary, "run", "bench"], d, env))
    server.shutdown()
    print(f"routines run (2 tool calls, instant model), {args.runs} runs:")
    print(f"  wall: median {statistics.median(walls):.1f} ms  min {min(walls):.1f}  max {max(walls):.1f}  (target <= 30 ms)")
    print(f"  peak RSS: median {statistics.median(rss):.1f} MB  max {max(rss):.1f}  (target <= 15 MB)")


if __name__ == "__main__":
    main()
