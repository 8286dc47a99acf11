#!/usr/bin/env python3
"""The daemon's memory against the length of its durable queue.

`routines daemon` with `max_concurrent_runs: 1` and a model that never answers
(a TCP server that accepts and stays silent), so the first run holds the only
slot and every other fire stays queued. 100 routines with `webhook: {path:
/hooks/qNN, auth: none}` (`overlap: allow`, so each request becomes a queued
run; rate limit and `limits.max_queued` out of the way) are sent N requests
over 32 keep-alive connections, spread over the 100 paths. Once every request
is answered 202 and the database holds N queued runs, the daemon's VmRSS and
VmHWM are read from /proc/PID/status (after 2 s of quiet, so freed memory
settles). Then the daemon stops and a second one starts on the same queue: the
time until it is ready (adopting the queue is part of it) and its VmRSS once it
has taken the queue up.

Cases: 0, 10,000 and 100,000 queued fires with a small body (`{"n": I}`), and
0 and 10,000 with a 64 KiB JSON body (`--big-cases 0,10000,100000` adds the
last; 100,000 bodies of 64 KiB are 13 GB in the database: the body as text and
as parsed JSON). Each case is a fresh project in a tempdir.

Target: RSS flat, under 64 MB, whatever the queue length.

Usage: python3 bench/queue_memory.py --binary target/release/routines
       [--cases 0,10000,100000] [--big-cases 0,10000] [--window N]
"""
import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_bench import Daemon, kb, proc_status  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATHS = 100
TARGET_MB = 64


def silent_model():
    """A model that accepts connections and never answers: the run holding the only slot
    waits for the whole measurement. Returns the port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held = []

    def accept():
        while True:
            conn, _ = server.accept()
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    return server.getsockname()[1]


def write_project(d, model_port, window):
    window = f", queue_window: {window}" if window else ""
    with open(os.path.join(d, "routines.yaml"), "w") as f:
        f.write(f"provider: {{ base_url: http://127.0.0.1:{model_port}/v1, model: m, timeout: 2h, max_retries: 0 }}\n"
                "server: { listen: 127.0.0.1:0, rate_limit: 1000000, rate_burst: 1000000 }\n"
                f"limits: {{ max_concurrent_runs: 1, max_queued: 1000000, shutdown_grace: 1s{window} }}\n")
    rdir = os.path.join(d, "routines")
    os.makedirs(rdir)
    for i in range(PATHS):
        with open(os.path.join(rdir, f"q{i:02d}.yaml"), "w") as f:
            f.write(f"prompt: Work.\noverlap: allow\ntimeout: 3h\nagent: {{ tools: [] }}\n"
                    f"on: [ {{ webhook: {{ path: /hooks/q{i:02d}, auth: none }} }} ]\n")


def loadgen(host, port, total, body_size, conns):
    """POSTs `total` requests over `conns` keep-alive connections, round robin over the
    paths; prints JSON with the count of each status."""
    statuses = {}
    counter = [0]
    pad = "x" * max(0, body_size - 40)

    async def worker():
        reader, writer = await asyncio.open_connection(host, port)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while counter[0] < total:
            i = counter[0]
            counter[0] += 1
            body = json.dumps({"n": i, "pad": pad} if pad else {"n": i}).encode()
            writer.write((f"POST /hooks/q{i % PATHS:02d} HTTP/1.1\r\nHost: {host}\r\n"
                          f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            statuses[status] = statuses.get(status, 0) + 1
        writer.close()

    async def main():
        await asyncio.gather(*(worker() for _ in range(conns)))

    t0 = time.perf_counter()
    asyncio.run(main())
    print(json.dumps({"statuses": statuses, "elapsed": time.perf_counter() - t0}))


def measure(binary, model_port, n, body_size, conns, window):
    with tempfile.TemporaryDirectory() as d:
        write_project(d, model_port, window)
        dm = Daemon(binary, d)
        host, port = dm.wait_ready()
        t0 = time.perf_counter()
        lg = {"statuses": {}, "elapsed": 0.0}
        if n:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--loadgen",
                                  f"{host}:{port}", str(n), str(body_size), str(conns)],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                dm.stop()
                sys.exit("the load generator failed:\n" + out.stderr)
            lg = json.loads(out.stdout)
        db = dm.db()
        deadline = time.time() + 60
        while time.time() < deadline:
            queued = db.execute("SELECT COUNT(*) FROM runs WHERE status = 'queued'").fetchone()[0]
            running = db.execute("SELECT COUNT(*) FROM runs WHERE status = 'running'").fetchone()[0]
            if queued + running >= n:
                break
            time.sleep(0.2)
        time.sleep(2)
        s = proc_status(dm.pid)
        res = {
            "n": n, "body": body_size, "accepted": lg["statuses"].get("202", 0),
            "other": {k: v for k, v in lg["statuses"].items() if k != "202"},
            "flood_s": lg["elapsed"], "queued": queued, "running": running,
            "rss_mb": kb(s, "VmRSS") / 1024, "hwm_mb": kb(s, "VmHWM") / 1024,
            "anon_mb": kb(s, "RssAnon") / 1024,
            "db_mb": sum(os.path.getsize(os.path.join(d, ".routines", f)) for f in os.listdir(os.path.join(d, ".routines"))
                         if f.startswith("routines.db")) / 1e6,
            "wall_s": time.perf_counter() - t0,
        }
        dm.stop()
        # A second daemon adopts the queue: time to ready (the adoption is part of it) and
        # its memory once the queue is taken up.
        dm = Daemon(binary, d)
        dm.wait_ready(timeout=1800)
        res["restart_s"] = dm.startup
        time.sleep(2)
        s = proc_status(dm.pid)
        res["restart_rss_mb"] = kb(s, "VmRSS") / 1024
        res["restart_hwm_mb"] = kb(s, "VmHWM") / 1024
        dm.stop()
    print(f"  {n:>7} fires, body {body_size:>6} B: RSS {res['rss_mb']:6.1f} MB (anon {res['anon_mb']:6.1f}, "
          f"peak {res['hwm_mb']:6.1f}); {res['accepted']} accepted in {res['flood_s']:.1f} s, other {res['other']}; "
          f"database: {res['queued']} queued + {res['running']} running, {res['db_mb']:.0f} MB; "
          f"restarted in {res['restart_s']:.1f} s, RSS then {res['restart_rss_mb']:.1f} MB "
          f"(peak {res['restart_hwm_mb']:.1f})", flush=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary")
    ap.add_argument("--cases", default="0,10000,100000", help="queue lengths with a small body")
    ap.add_argument("--big-cases", default="0,10000", help="queue lengths with a 64 KiB body")
    ap.add_argument("--conns", type=int, default=32)
    ap.add_argument("--window", type=int, help="limits.queue_window (default: the daemon's own); a binary "
                    "from before the window existed refuses the key")
    ap.add_argument("--loadgen", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.loadgen:
        hostport, total, body, conns = args.loadgen
        host, port = hostport.rsplit(":", 1)
        loadgen(host, int(port), int(total), int(body), int(conns))
        return
    binary = args.binary
    if not binary:
        subprocess.run(["cargo", "build", "--release", "--locked", "-q"], cwd=ROOT, check=True)
        binary = os.path.join(ROOT, "target", "release", "routines")
    binary = os.path.abspath(binary)
    model_port = silent_model()
    print(f"== daemon RSS against queue length (max_concurrent_runs 1, the model never answers, {PATHS} paths) ==")
    results = []
    for n in [int(x) for x in args.cases.split(",") if x]:
        results.append(measure(binary, model_port, n, 16, args.conns, args.window))
    for n in [int(x) for x in args.big_cases.split(",") if x]:
        results.append(measure(binary, model_port, n, 64 * 1024, args.conns, args.window))
    print("\n| queued fires | body | VmRSS | peak (VmHWM) | flood | restart: ready in, VmRSS | verdict |\n"
          "|---|---|---|---|---|---|---|")
    for r in results:
        body = "64 KiB" if r["body"] > 1024 else "small"
        verdict = "met" if max(r["rss_mb"], r["restart_rss_mb"]) < TARGET_MB else "MISSED"
        print(f"| {r['n']:,} | {body} | {r['rss_mb']:.1f} MB | {r['hwm_mb']:.1f} MB | {r['flood_s']:.1f} s | "
              f"{r['restart_s']:.1f} s, {r['restart_rss_mb']:.1f} MB | {verdict} |")
    lost = [r for r in results if r["accepted"] != r["n"] or r["queued"] + r["running"] < r["n"]]
    if lost:
        sys.exit(f"not every fire was accepted and queued: {lost}")


if __name__ == "__main__":
    main()
