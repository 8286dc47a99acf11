#!/usr/bin/env python3
"""Whole-process benchmarks of `routines daemon`.

Three scenarios, each against a fresh project in a tempdir and an in-process,
instant OpenAI-compatible model server (as in bench/run_latency.py):

  idle     10,000 routines (cron `0 3 1 1 *`, every tenth `every: 24h`) that
           do not fire during the measurement: startup time, idle RSS and
           idle CPU (and wakeups) over 10 s.          Targets: RSS <= 40 MB, CPU ~ 0
  burst    1,000 routines with `at:` the same instant, once with the default
           `max_concurrent_runs` (4) and once with 1000: lateness of the
           claim (runs.created_at - scheduled_for) and of the start
           (runs.started_at - scheduled_for), p50/p99/max, and exactly-once.
                                                        Target: fire lateness p99 <= 50 ms
  webhook  one routine with `webhook: {path: /hooks/load, auth: none}`, 64
           keep-alive connections POSTing for 10 s: accepted (202) req/s, and
           every accepted run id present in the database afterwards.
                                                        Target: >= 5,000 accepted/s for 10 s

It prints figures; it asserts nothing about timings.

Usage: python3 bench/daemon_bench.py [--binary PATH] [--only idle|burst|webhook]
(builds target/release/routines first unless --binary is given)
"""
import argparse
import asyncio
import datetime as dt
import http.server
import json
import os
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

COMPLETION = json.dumps({
    "id": "x", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}).encode()


# --------------------------------------------------------------------------
# The instant model
# --------------------------------------------------------------------------

class InstantModel(http.server.BaseHTTPRequestHandler):
    """Answers every chat completion at once with the text `done`."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without this, Nagle and
    # delayed ACKs add 40 ms to every response on Linux.
    disable_nagle_algorithm = True
    requests = 0
    # Seconds each answer waits (the webhook scenario sets it).
    delay = 0.0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        InstantModel.requests += 1
        if InstantModel.delay:
            time.sleep(InstantModel.delay)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(COMPLETION)))
        self.end_headers()
        self.wfile.write(COMPLETION)

    def log_message(self, *args):
        pass


class ModelServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # 1,000 runs may connect at once

    def handle_error(self, request, client_address):
        # A daemon stopped mid-request resets its connections; that is expected.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def start_model():
    server = ModelServer(("127.0.0.1", 0), InstantModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# --------------------------------------------------------------------------
# Projects and the daemon process
# --------------------------------------------------------------------------

def write_project(d, model_port, routines, config_extra=""):
    """routines: {name: yaml text}."""
    with open(os.path.join(d, "routines.yaml"), "w") as f:
        f.write(f"provider: {{ base_url: http://127.0.0.1:{model_port}/v1, model: m }}\n")
        if "server:" not in config_extra:
            f.write("server: { listen: 127.0.0.1:0 }\n")
        f.write(config_extra)
    rdir = os.path.join(d, "routines")
    os.makedirs(rdir, exist_ok=True)
    for name, text in routines.items():
        with open(os.path.join(rdir, name + ".yaml"), "w") as f:
            f.write(text)


class Daemon:
    """`routines daemon` in a project folder, with its stderr collected."""

    def __init__(self, binary, d, env=None):
        self.d = d
        self.lines = []
        self.ready = threading.Event()
        self.address = None
        env = {"PATH": os.environ.get("PATH", ""), "HOME": d, **(env or {})}
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen([binary, "daemon"], cwd=d, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.pid = self.p.pid
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.p.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            m = re.search(r"listening on http://(\S+?);", line)
            if m and not self.ready.is_set():
                self.address = m.group(1)
                self.startup = time.perf_counter() - self.t0
                self.ready.set()
                line = line[:200] + (" ..." if len(line) > 200 else "")
            if len(self.lines) < 200:
                self.lines.append(line)

    def wait_ready(self, timeout=120):
        deadline = time.time() + timeout
        while not self.ready.wait(0.1):
            if self.p.poll() is not None or time.time() > deadline:
                self.stop()
                sys.exit("the daemon did not start:\n" + "\n".join(self.lines[-30:]))
        host, port = self.address.rsplit(":", 1)
        return host, int(port)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()

    def db(self):
        path = os.path.join(self.d, ".routines", "routines.db")
        c = sqlite3.connect(path, timeout=30)
        return c


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def kb(status, key):
    return int(status[key].split()[0])


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])  # utime + stime


def ctx_switches(pid):
    """Context switches summed over all threads: a thread that wakes up
    shows here even when it uses almost no CPU."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            s = proc_status(f"{pid}/task/{tid}")
            total += int(s["voluntary_ctxt_switches"]) + int(s["nonvoluntary_ctxt_switches"])
        except (FileNotFoundError, KeyError, ProcessLookupError):
            pass
    return total


def http_get(host, port, path):
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data.split(b"\r\n\r\n", 1)[1].decode(errors="replace")


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def parse_db_time(text):
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


# --------------------------------------------------------------------------
# 1. idle
# --------------------------------------------------------------------------

def bench_idle(binary, model_port, n=10_000, settle=3.0, window=10.0):
    print(f"\n== idle: {n} routines loaded, nothing due ==", flush=True)
    now = time.time()
    # `every: 24h` fires at 00:00 UTC; stay clear of it.
    every = "24h" if (86400 - now % 86400) > 600 else "23h"
    routines = {}
    for i in range(n):
        trig = f"every: {every}" if i % 10 == 0 else 'cron: "0 3 1 1 *"'
        routines[f"r{i:05d}"] = f"prompt: Say done.\non:\n  - {trig}\n"
    res = {}
    with tempfile.TemporaryDirectory() as d:
        write_project(d, model_port, routines, "limits: { shutdown_grace: 1s }\n")
        dm = Daemon(binary, d)
        dm.wait_ready()
        res["startup_s"] = dm.startup
        res["hwm_startup_mb"] = kb(proc_status(dm.pid), "VmHWM") / 1024
        time.sleep(settle)
        s0, c0, x0, t0 = proc_status(dm.pid), cpu_ticks(dm.pid), ctx_switches(dm.pid), time.perf_counter()
        rss = [kb(s0, "VmRSS") / 1024]
        while time.perf_counter() - t0 < window:
            time.sleep(1)
            rss.append(kb(proc_status(dm.pid), "VmRSS") / 1024)
        s1, c1, x1, t1 = proc_status(dm.pid), cpu_ticks(dm.pid), ctx_switches(dm.pid), time.perf_counter()
        res["rss_mb"] = max(rss)
        res["hwm_mb"] = kb(s1, "VmHWM") / 1024
        res["rss_anon_mb"] = kb(s1, "RssAnon") / 1024
        res["threads"] = int(s1["Threads"])
        res["cpu_pct"] = (c1 - c0) / CLK_TCK / (t1 - t0) * 100
        res["wakeups_per_s"] = (x1 - x0) / (t1 - t0)
        runs = dm.db().execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        dm.stop()
        # A second start: schedule state is in the database now.
        dm = Daemon(binary, d)
        dm.wait_ready()
        res["restart_s"] = dm.startup
        dm.stop()
    print(f"  startup (empty database): {res['startup_s']:.2f} s; restart: {res['restart_s']:.2f} s")
    print(f"  RSS idle: {res['rss_mb']:.1f} MB (anon {res['rss_anon_mb']:.1f} MB); "
          f"peak (VmHWM) {res['hwm_mb']:.1f} MB, of which during startup {res['hwm_startup_mb']:.1f} MB")
    print(f"  CPU idle over {window:.0f} s: {res['cpu_pct']:.2f} %; "
          f"{res['wakeups_per_s']:.1f} context switches/s over {res['threads']} threads; runs recorded: {runs}")
    return res


# --------------------------------------------------------------------------
# 2. burst
# --------------------------------------------------------------------------

def bench_burst(binary, model_port, max_concurrent, n=1000, lead=8.0):
    label = "default (4)" if max_concurrent is None else str(max_concurrent)
    print(f"\n== burst: {n} routines due at the same instant, max_concurrent_runs {label} ==", flush=True)
    # Startup with 1,000 routines takes well under a second; the instant is
    # `lead` s after that, on a whole second.
    at = dt.datetime.fromtimestamp(int(time.time() + 1.5 + lead), dt.timezone.utc)
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    routines = {f"b{i:04d}": f"prompt: Say done.\non:\n  - at: {stamp}\n" for i in range(n)}
    limits = "limits: { shutdown_grace: 1s" + (f", max_concurrent_runs: {max_concurrent}" if max_concurrent else "") + " }\n"
    res = {"label": label}
    with tempfile.TemporaryDirectory() as d:
        write_project(d, model_port, routines, limits)
        dm = Daemon(binary, d)
        host, port = dm.wait_ready()
        margin = at.timestamp() - time.time()
        if margin < 2:
            print(f"  warning: the daemon was ready only {margin:.1f} s before the instant")
        # Wait for every run to finish (or 60 s past the instant).
        db = dm.db()
        peak_rss = 0
        deadline = at.timestamp() + 60
        while time.time() < deadline:
            time.sleep(0.25)
            peak_rss = max(peak_rss, kb(proc_status(dm.pid), "VmRSS") / 1024)
            if time.time() < at.timestamp():
                continue
            left = db.execute("SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running')").fetchone()[0]
            total = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
            if total >= n and left == 0:
                break
        metrics = http_get(host, port, "/metrics")
        rows = db.execute(
            "SELECT routine, scheduled_for, created_at, started_at, finished_at, status FROM runs "
            "WHERE kind = 'routine' AND trigger = 'at'").fetchall()
        dups = db.execute("SELECT COUNT(*) FROM (SELECT routine FROM runs GROUP BY routine, scheduled_for "
                          "HAVING COUNT(*) > 1)").fetchone()[0]
        statuses = dict(db.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())
        dm.stop()
    res["count"] = len(rows)
    res["distinct"] = len({r[0] for r in rows})
    res["dups"] = dups
    res["statuses"] = statuses
    res["peak_rss_mb"] = peak_rss
    claim = [(parse_db_time(r[2]) - parse_db_time(r[1])).total_seconds() * 1000 for r in rows]
    start = [(parse_db_time(r[3]) - parse_db_time(r[1])).total_seconds() * 1000 for r in rows if r[3]]
    done = [parse_db_time(r[4]) for r in rows if r[4]]
    for key, vals in (("claim", claim), ("start", start)):
        if vals:
            res[key] = (pct(vals, 50), pct(vals, 99), max(vals))
    res["drain_s"] = (max(done) - at).total_seconds() if done else None
    b50 = re.search(r'routines_fire_lateness_seconds_bucket\{le="0.05"\} (\d+)', metrics)
    cnt = re.search(r"routines_fire_lateness_seconds_count (\d+)", metrics)
    res["metrics_le_50ms"] = f"{b50.group(1)}/{cnt.group(1)}" if b50 and cnt else "?"
    print(f"  runs: {res['count']} ({res['distinct']} routines, {dups} duplicate instants); statuses {statuses}")
    for key, what in (("claim", "claimed (created_at)"), ("start", "started (started_at)")):
        if key in res:
            p50, p99, mx = res[key]
            print(f"  {what:22} late p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  max {mx:7.1f} ms")
    if res["drain_s"] is not None:
        print(f"  last run finished {res['drain_s']:.2f} s after the instant; peak RSS {peak_rss:.1f} MB; "
              f"/metrics lateness <= 50 ms: {res['metrics_le_50ms']}")
    return res


# --------------------------------------------------------------------------
# 3. webhook
# --------------------------------------------------------------------------

def loadgen(host, port, path, conns, duration):
    """Keep-alive POSTs on `conns` connections for `duration` s; prints JSON."""
    body = b'{"event":"load"}'
    req = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    statuses = {}
    per_second = {}
    latencies = []
    run_ids = []
    errors = [0]

    class Conn(asyncio.Protocol):
        def __init__(self, start, deadline, done):
            self.start, self.deadline, self.done = start, deadline, done
            self.buf = b""

        def connection_made(self, transport):
            self.t = transport
            transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.send()

        def send(self):
            now = time.perf_counter()
            if now >= self.deadline:
                self.t.close()
                return
            self.sent = now
            self.t.write(req)

        def data_received(self, data):
            self.buf += data
            while True:
                end = self.buf.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = self.buf[:end].lower()
                i = head.find(b"content-length:")
                length = int(head[i + 15:head.find(b"\r\n", i) if head.find(b"\r\n", i) > 0 else None]) if i >= 0 else 0
                if len(self.buf) < end + 4 + length:
                    return
                status = int(self.buf[9:12])
                resp_body = self.buf[end + 4:end + 4 + length]
                self.buf = self.buf[end + 4 + length:]
                now = time.perf_counter()
                statuses[status] = statuses.get(status, 0) + 1
                if status == 202:
                    sec = int(now - self.start)
                    per_second[sec] = per_second.get(sec, 0) + 1
                    latencies.append(now - self.sent)
                    m = re.search(rb'"run_id"\s*:\s*(\d+)', resp_body)
                    if m:
                        run_ids.append(int(m.group(1)))
                self.send()

        def connection_lost(self, exc):
            if not self.done.done():
                self.done.set_result(None)

    async def one(start, deadline):
        loop = asyncio.get_running_loop()
        while time.perf_counter() < deadline:
            done = loop.create_future()
            try:
                await loop.create_connection(lambda: Conn(start, deadline, done), host, port)
            except OSError:
                errors[0] += 1
                await asyncio.sleep(0.01)
                continue
            await done

    async def main():
        start = time.perf_counter()
        deadline = start + duration
        await asyncio.gather(*(one(start, deadline) for _ in range(conns)))
        return time.perf_counter() - start

    elapsed = asyncio.run(main())
    ru = os.times()
    print(json.dumps({"statuses": statuses, "per_second": per_second, "elapsed": elapsed,
                      "latencies": [pct(latencies, p) for p in (50, 99)] if latencies else None,
                      "max_latency": max(latencies) if latencies else None,
                      "run_ids": run_ids, "connect_errors": errors[0],
                      "cpu_s": ru.user + ru.system}))


def bench_webhook(binary, model_port, conns=64, duration=10.0, overlap="allow"):
    print(f"\n== webhook: {conns} keep-alive connections POSTing for {duration:.0f} s "
          f"(overlap: {overlap}, max_concurrent_runs 4, model answers in {InstantModel.delay:g} s) ==", flush=True)
    routine = f"prompt: Say done.\noverlap: {overlap}\non:\n  - webhook: {{ path: /hooks/load, auth: none }}\n"
    config = ("server: { listen: 127.0.0.1:0, rate_limit: 1000000, rate_burst: 1000000 }\n"
              "limits: { max_concurrent_runs: 4, shutdown_grace: 1s }\n")
    res = {}
    with tempfile.TemporaryDirectory() as d:
        write_project(d, model_port, {"load": routine}, config)
        dm = Daemon(binary, d)
        host, port = dm.wait_ready()
        c0, t0 = cpu_ticks(dm.pid), time.perf_counter()
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--loadgen",
                              f"{host}:{port}", str(conns), str(duration)],
                             capture_output=True, text=True)
        c1, t1 = cpu_ticks(dm.pid), time.perf_counter()
        if out.returncode != 0:
            dm.stop()
            sys.exit("the load generator failed:\n" + out.stderr)
        lg = json.loads(out.stdout)
        rss = kb(proc_status(dm.pid), "VmRSS") / 1024
        time.sleep(0.5)
        db = dm.db()
        ids = {r[0] for r in db.execute("SELECT id FROM runs WHERE routine = 'load' AND trigger = 'webhook'")}
        statuses = dict(db.execute("SELECT status, COUNT(*) FROM runs WHERE routine = 'load' GROUP BY status"))
        dm.stop()
    accepted = lg["statuses"].get("202", 0)
    returned = lg["run_ids"]
    missing = set(returned) - ids
    secs = [lg["per_second"].get(str(s), 0) for s in range(int(duration))]
    res.update(accepted=accepted, rate=accepted / lg["elapsed"], min_second=min(secs) if secs else 0,
               rows=len(ids), missing=len(missing), dup_ids=len(returned) - len(set(returned)),
               other={k: v for k, v in lg["statuses"].items() if k != "202"},
               daemon_cpu_pct=(c1 - c0) / CLK_TCK / (t1 - t0) * 100,
               loadgen_cpu_pct=lg["cpu_s"] / lg["elapsed"] * 100, rss_mb=rss, statuses=statuses)
    print(f"  accepted (202): {accepted} in {lg['elapsed']:.1f} s = {res['rate']:.0f}/s; "
          f"per second min {res['min_second']} max {max(secs) if secs else 0}; other answers {res['other']}; "
          f"connect errors {lg['connect_errors']}")
    if lg["latencies"]:
        print(f"  latency of a 202: p50 {lg['latencies'][0] * 1000:.2f} ms  p99 {lg['latencies'][1] * 1000:.2f} ms  "
              f"max {lg['max_latency'] * 1000:.1f} ms")
    print(f"  database: {len(ids)} webhook runs {statuses}; accepted run ids missing from it: {len(missing)}; "
          f"duplicate ids: {res['dup_ids']}")
    print(f"  CPU during the load: daemon {res['daemon_cpu_pct']:.0f} %, load generator {res['loadgen_cpu_pct']:.0f} % "
          f"(of one core; {os.cpu_count()} cores); daemon RSS after {rss:.1f} MB")
    if res["loadgen_cpu_pct"] > 90:
        print("  warning: the load generator used a whole core; the rate may be its limit, not the daemon's")
    return res


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary")
    ap.add_argument("--only", choices=["idle", "burst", "webhook"])
    ap.add_argument("--routines", type=int, default=10_000, help="routines in the idle scenario")
    ap.add_argument("--overlap", default="allow", choices=["allow", "skip", "queue", "replace"],
                    help="overlap of the webhook routine (allow: every request becomes a queued run)")
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--model-delay", type=float, default=2.0,
                    help="seconds the model takes per answer in the webhook scenario (a real model takes "
                         "seconds; 0 makes 4 instant runs compete with the intake for the CPU)")
    ap.add_argument("--loadgen", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.loadgen:
        hostport, conns, duration = args.loadgen
        host, port = hostport.rsplit(":", 1)
        loadgen(host, int(port), "/hooks/load", int(conns), float(duration))
        return
    binary = args.binary
    if not binary:
        subprocess.run(["cargo", "build", "--release", "--locked", "-q"], cwd=ROOT, check=True)
        binary = os.path.join(ROOT, "target", "release", "routines")
    binary = os.path.abspath(binary)

    model = start_model()
    model_port = model.server_address[1]
    idle = burst = webhook = None
    if args.only in (None, "idle"):
        idle = bench_idle(binary, model_port, n=args.routines)
    if args.only in (None, "burst"):
        burst = [bench_burst(binary, model_port, None), bench_burst(binary, model_port, 1000)]
    if args.only in (None, "webhook"):
        InstantModel.delay = args.model_delay
        webhook = bench_webhook(binary, model_port, conns=args.conns, overlap=args.overlap)
    model.shutdown()

    def verdict(ok):
        return "met" if ok else "MISSED"

    rows = []
    if idle:
        rows += [
            (f"idle RSS, {args.routines} routines", "<= 40 MB",
             f"{idle['rss_mb']:.1f} MB (peak {idle['hwm_mb']:.1f})", verdict(idle["rss_mb"] <= 40)),
            ("idle CPU", "~ 0, no polling",
             f"{idle['cpu_pct']:.2f} %, {idle['wakeups_per_s']:.1f} wakeups/s", verdict(idle["cpu_pct"] < 0.5)),
            ("startup / restart", "-", f"{idle['startup_s']:.2f} s / {idle['restart_s']:.2f} s", ""),
        ]
    if burst:
        for b in burst:
            if "claim" in b:
                rows.append((f"fire lateness p99 (claim), mcr {b['label']}", "<= 50 ms",
                             f"{b['claim'][1]:.1f} ms (max {b['claim'][2]:.1f})", verdict(b["claim"][1] <= 50)))
            if "start" in b:
                rows.append((f"start lateness p99, mcr {b['label']}", "(queueing)",
                             f"{b['start'][1]:.1f} ms (max {b['start'][2]:.1f})", ""))
            rows.append((f"recorded exactly once, mcr {b['label']}", "1000, 0 dups",
                         f"{b['count']}, {b['dups']} dups", verdict(b["count"] == 1000 and b["distinct"] == 1000 and b["dups"] == 0)))
    if webhook:
        rows += [
            ("webhook accepted/s over 10 s", ">= 5000",
             f"{webhook['rate']:.0f}/s (worst second {webhook['min_second']})", verdict(webhook["min_second"] >= 5000)),
            ("webhook 202s in the database", "all",
             f"{webhook['accepted'] - webhook['missing']}/{webhook['accepted']}",
             verdict(webhook["missing"] == 0 and webhook["rows"] >= webhook["accepted"])),
        ]
    w = [max(len(r[i]) for r in rows) for i in range(4)]
    print("\nSummary (mcr = limits.max_concurrent_runs)")
    print(f"  {'target':<{w[0]}}  {'goal':<{w[1]}}  {'measured':<{w[2]}}  result")
    for r in rows:
        print(f"  {r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  {r[3]}")


if __name__ == "__main__":
    main()
