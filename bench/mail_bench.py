#!/usr/bin/env python3
"""Mail delivery throughput and quiet heartbeats of the `routines` binary.

Every scenario uses a fresh project in a tempdir, the instant model server of
bench/daemon_bench.py (which counts the requests it answers) and a real SMTP
server process (aiosmtpd, started from this script with `--smtp-serve`) that
reports the arrival time and Message-ID of every message it accepts.

  retry      1,000 webhook fires of a routine that mails its report, run by
             `routines daemon` while nothing listens on the SMTP port: 1,000
             runs, each with a `failed` mail delivery kept in the outbox. The
             daemon stops, the SMTP server comes up on that port, and
             `routines deliver --retry` sends them all (one after the other,
             through lettre's pooled SMTP transport), timed from its start to
             its exit.
                                            Target: >= 200 messages/s
  live       the daemon with the SMTP server up: 1,000 webhook fires, each run
             mails its report; messages/s from the first POST to the last
             arrival (runs and mail together).          (figures only)
  heartbeat  `routines heartbeat` N times outside active hours, N times with an
             empty checklist and N times with none; the model requests the
             mock answered, mails the SMTP server got, and the runs recorded
             `skipped` (reason `quiet`). Then one beat inside active hours
             with a checklist, to show that the counters do count.
                                            Target: 0 model calls when quiet
  baseline   a raw Python client sending 1,000 messages over one connection
             to the same kind of SMTP server (smtplib; then the command
             sequence of lettre: NOOP before each message and the content and
             the final `.` in two writes, with and without TCP_NODELAY): what
             the server can take, to tell its limits from the binary's.

Every scenario checks that exactly the expected messages arrived (no loss, no
duplicate Message-ID) and that the database agrees, and exits 1 if not, or if a
quiet beat called the model; timings are figures only.

Usage: python3 bench/mail_bench.py [--binary PATH] [--only retry|live|heartbeat|baseline]
(builds target/release/routines first unless --binary is given; installs
aiosmtpd with pip into target/tmp/pydeps if it cannot be imported, as the
tests do)
"""
import argparse
import http.client
import json
import os
import re
import resource
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no bench/__pycache__ from the import below
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_bench import CLK_TCK, Daemon, InstantModel, cpu_ticks, start_model, write_project  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYDEPS = os.path.join(ROOT, "target", "tmp", "pydeps")
FROM = "Routines <routines@example.com>"
TO = "ops@example.com"


# --------------------------------------------------------------------------
# The SMTP server (a child process: aiosmtpd is asyncio in pure Python, so it
# gets its own interpreter and core)
# --------------------------------------------------------------------------

def smtp_serve(port):
    """Serves SMTP on 127.0.0.1:port (0 = a free one). Prints `READY <port>`,
    then `CONN <unix time>` per connection and `MSG <unix time> <recipients>
    <Message-ID>` per accepted message;
    exits when stdin closes."""
    import asyncio
    import warnings
    warnings.simplefilter("ignore", DeprecationWarning)
    from aiosmtpd.smtp import SMTP

    out = sys.stdout

    class Handler:
        async def handle_DATA(self, server, session, envelope):
            raw = envelope.original_content or envelope.content
            if isinstance(raw, str):
                raw = raw.encode()
            m = re.search(rb"(?im)^message-id:[ \t]*(\S+)", raw)
            mid = m.group(1).decode(errors="replace") if m else "-"
            out.write(f"MSG {time.time():.6f} {len(envelope.rcpt_tos)} {mid}\n")
            out.flush()
            return "250 2.0.0 Message accepted for delivery"

    handler = Handler()

    def protocol():
        # One per connection: counts the connections a pool opens.
        out.write(f"CONN {time.time():.6f}\n")
        out.flush()
        # hostname given: otherwise each connection looks up the FQDN.
        return SMTP(handler, hostname="localhost", ident="routines-bench-smtp")

    async def serve():
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
        loop = asyncio.get_running_loop()
        server = await loop.create_server(protocol, sock=sock)
        out.write("READY %d\n" % sock.getsockname()[1])
        out.flush()
        await server.serve_forever()

    def watch_stdin():
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    asyncio.run(serve())


def pythonpath():
    return os.pathsep.join(p for p in (PYDEPS, os.environ.get("PYTHONPATH")) if p)


def ensure_aiosmtpd():
    """aiosmtpd importable by the server process: installed, or installed here
    once with pip into target/tmp/pydeps (the folder the tests use)."""
    def importable():
        env = dict(os.environ, PYTHONPATH=pythonpath())
        return subprocess.run([sys.executable, "-c", "import aiosmtpd"], env=env,
                              capture_output=True).returncode == 0
    if importable():
        return
    print(f"installing aiosmtpd into {PYDEPS} ...", flush=True)
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "--target", PYDEPS, "aiosmtpd"], capture_output=True, text=True)
    if p.returncode != 0 or not importable():
        sys.exit("pip could not install aiosmtpd for the SMTP server:\n" + p.stderr)


class SmtpServer:
    """The SMTP server process and the messages it reported, in order."""

    def __init__(self, port=0):
        env = dict(os.environ, PYTHONPATH=pythonpath())
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--smtp-serve", str(port)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        line = self.p.stdout.readline()
        if not line.startswith("READY "):
            self.stop()
            sys.exit(f"the SMTP server did not start (it printed {line!r})")
        self.port = int(line.split()[1])
        self.messages = []  # (arrival unix time, recipients, Message-ID)
        self.connections = 0
        self.conn_times = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            parts = line.split()
            if len(parts) == 4 and parts[0] == "MSG":
                with self.cond:
                    self.messages.append((float(parts[1]), int(parts[2]), parts[3]))
                    self.cond.notify_all()
            elif parts and parts[0] == "CONN":
                with self.cond:
                    self.connections += 1
                    self.conn_times.append(float(parts[1]))

    def wait_for(self, n, timeout):
        """Waits until n messages arrived; True if they did."""
        deadline = time.time() + timeout
        with self.cond:
            while len(self.messages) < n:
                left = deadline - time.time()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    def count(self):
        with self.cond:
            return len(self.messages)

    def settle(self, quiet=0.5, timeout=10):
        """Waits until no message arrived for `quiet` s (late duplicates would show)."""
        deadline = time.time() + timeout
        last = self.count()
        while time.time() < deadline:
            time.sleep(quiet)
            now = self.count()
            if now == last:
                return
            last = now

    def cpu_s(self):
        return cpu_ticks(self.p.pid) / CLK_TCK

    def stop(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.close()
            except OSError:
                pass
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def free_port():
    """A port nothing listens on (bound and closed again)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------
# Projects
# --------------------------------------------------------------------------

ROUTINE = ("prompt: Write the report.\n"
           "overlap: allow\n"
           "on:\n  - webhook: { path: /hooks/mail, auth: none }\n"
           "deliver:\n"
           f"  - mail: {{ to: [{TO}], subject: \"Report {{{{ routine.name }}}} run {{{{ run.id }}}}\" }}\n")


def mail_config(smtp_port):
    return (f"mail:\n  from: \"{FROM}\"\n"
            f"  smtp: {{ host: 127.0.0.1, port: {smtp_port}, security: none, timeout: 5s }}\n")


def daemon_config(smtp_port, concurrency):
    return ("server: { listen: 127.0.0.1:0, rate_limit: 1000000, rate_burst: 1000000 }\n"
            f"limits: {{ max_concurrent_runs: {concurrency}, shutdown_grace: 5s }}\n"
            + mail_config(smtp_port))


def env_for(d):
    return {"PATH": os.environ.get("PATH", ""), "HOME": d}


def fire(host, port, path, n, conns=8):
    """n POSTs over `conns` keep-alive connections; returns (statuses, run ids, seconds)."""
    statuses, ids, lock = {}, [], threading.Lock()
    counts = [n // conns + (1 if i < n % conns else 0) for i in range(conns)]

    def worker(k):
        c = http.client.HTTPConnection(host, port, timeout=30)
        for _ in range(k):
            c.request("POST", path, body=b'{"event":"bench"}', headers={"Content-Type": "application/json"})
            r = c.getresponse()
            body = r.read()
            m = re.search(rb'"run_id"\s*:\s*(\d+)', body)
            with lock:
                statuses[r.status] = statuses.get(r.status, 0) + 1
                if m:
                    ids.append(int(m.group(1)))
        c.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,)) for k in counts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statuses, ids, time.perf_counter() - t0


def wait_runs(db, n, timeout):
    """Waits until n runs exist and none is queued or running; returns the runs' statuses."""
    deadline = time.time() + timeout
    while True:
        total, busy = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(status IN ('queued', 'running')), 0) FROM runs").fetchone()
        deliveries = db.execute("SELECT COUNT(*) FROM deliveries WHERE status NOT IN ('pending', 'sending')").fetchone()[0]
        if total >= n and busy == 0 and deliveries >= n:
            break
        if time.time() > deadline:
            break
        time.sleep(0.2)
    return dict(db.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())


def delivery_statuses(db):
    return dict(db.execute("SELECT status, COUNT(*) FROM deliveries WHERE kind = 'mail' GROUP BY status").fetchall())


def outbox_count(d):
    box = os.path.join(d, ".routines", "outbox")
    return len([f for f in os.listdir(box) if f.endswith(".eml")]) if os.path.isdir(box) else 0


def children_cpu_s():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def check_messages(msgs, n):
    ids = [m[2] for m in msgs]
    return {"received": len(msgs), "distinct": len(set(ids)), "dups": len(ids) - len(set(ids)),
            "exact": len(msgs) == n and len(set(ids)) == n}


# --------------------------------------------------------------------------
# 1. retry
# --------------------------------------------------------------------------

def bench_retry(binary, n, concurrency):
    print(f"\n== retry: {n} failed mail deliveries, then `routines deliver --retry` ==", flush=True)
    res = {"n": n}
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        write_project(d, MODEL_PORT, {"report": ROUTINE}, daemon_config(port, concurrency))
        # Setup: the daemon runs the routine n times while nothing listens on `port`.
        t0 = time.perf_counter()
        dm = Daemon(binary, d)
        host, hport = dm.wait_ready()
        statuses, ids, fire_s = fire(host, hport, "/hooks/mail", n)
        db = dm.db()
        runs = wait_runs(db, n, timeout=300)
        failed = delivery_statuses(db)
        dm.stop()
        setup_s = time.perf_counter() - t0
        kept = outbox_count(d)
        print(f"  setup: {n} POSTs {statuses} in {fire_s:.1f} s; runs {runs}; mail deliveries {failed}; "
              f"outbox {kept} .eml; {setup_s:.1f} s in all (max_concurrent_runs {concurrency})")
        if failed.get("failed", 0) != n:
            sys.exit(f"expected {n} failed mail deliveries, the database has {failed}; daemon log:\n"
                     + "\n".join(dm.lines[-20:]))

        # The measurement: the server comes up on the port; one deliver --retry.
        smtp = SmtpServer(port)
        c0, s0 = children_cpu_s(), smtp.cpu_s()
        t0w, t0 = time.time(), time.perf_counter()
        p = subprocess.run([binary, "deliver", "--retry"], cwd=d, env=env_for(d),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        cpu = children_cpu_s() - c0
        smtp.wait_for(n, 10)
        s1 = smtp.cpu_s()
        smtp.settle()
        # Startup cost of the same command with nothing to do.
        t1 = time.perf_counter()
        p2 = subprocess.run([binary, "deliver", "--retry"], cwd=d, env=env_for(d),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        idle_wall = time.perf_counter() - t1
        smtp.settle(0.3)
        smtp.stop()
        db = sqlite3.connect(os.path.join(d, ".routines", "routines.db"), timeout=30)
        after = delivery_statuses(db)
        left = outbox_count(d)
    msgs = smtp.messages
    lines = p.stderr.splitlines()
    res.update(check_messages(msgs, n), wall=wall, rate=n / wall, rc=p.returncode, cpu=cpu,
               server_cpu=s1 - s0, after=after, outbox_left=left, idle_wall=idle_wall, connections=smtp.connections,
               idle_msg=p2.stderr.strip(), delivered_lines=sum(1 for x in lines if x.startswith("delivered")))
    if len(msgs) >= 2:
        first, last = msgs[0][0], msgs[-1][0]
        res["first_ms"] = (first - t0w) * 1000
        res["span"] = last - first
        res["rate_span"] = (len(msgs) - 1) / (last - first) if last > first else float("inf")
        gaps = sorted(b[0] - a[0] for a, b in zip(msgs, msgs[1:]))
        res["gap_p50_ms"] = gaps[len(gaps) // 2] * 1000
        res["gap_p99_ms"] = gaps[min(len(gaps) - 1, round(0.99 * (len(gaps) - 1)))] * 1000
    print(f"  deliver --retry: exit {p.returncode}, {res['delivered_lines']} `delivered` lines, "
          f"{wall:.2f} s wall = {res['rate']:.0f} messages/s")
    if "span" in res:
        print(f"  at the server: first message {res['first_ms']:.0f} ms after the start, first to last "
              f"{res['span']:.2f} s = {res['rate_span']:.0f} messages/s; gap between messages p50 "
              f"{res['gap_p50_ms']:.2f} ms, p99 {res['gap_p99_ms']:.2f} ms")
    print(f"  CPU: routines {cpu:.2f} s ({cpu / wall * 100:.0f} % of the wall time), "
          f"SMTP server {res['server_cpu']:.2f} s ({res['server_cpu'] / wall * 100:.0f} %)")
    print(f"  received {res['received']} ({res['distinct']} distinct Message-IDs, {res['dups']} duplicates) "
          f"over {res['connections']} SMTP connection(s); database {after}; outbox left {left} .eml")
    print(f"  a second deliver --retry: {idle_wall * 1000:.0f} ms, {res['idle_msg']!r}")
    if 38 <= res.get("gap_p50_ms", 0) <= 60 and cpu / wall < 0.2:
        print("  note: about 40 ms per message with the CPU idle is the client's Nagle algorithm waiting for the "
              "server's delayed ACK before it sends the final `.` (see bench/README.md and the baseline scenario)")
    if smtp.connections > 1:
        print("  SMTP connections opened at " + ", ".join(
            f"+{t - t0w:.2f} s (after {sum(1 for m in msgs if m[0] < t)} messages)" for t in smtp.conn_times))
    if p.returncode != 0:
        print("  deliver --retry stderr (last lines):\n    " + "\n    ".join(lines[-5:]))
    return res


# --------------------------------------------------------------------------
# 2. live
# --------------------------------------------------------------------------

def bench_live(binary, n, concurrency):
    print(f"\n== live: the daemon, SMTP up, {n} webhook fires each mailing its report "
          f"(max_concurrent_runs {concurrency}) ==", flush=True)
    smtp = SmtpServer()
    res = {"n": n}
    with tempfile.TemporaryDirectory() as d:
        write_project(d, MODEL_PORT, {"report": ROUTINE}, daemon_config(smtp.port, concurrency))
        dm = Daemon(binary, d)
        host, hport = dm.wait_ready()
        c0 = cpu_ticks(dm.pid)
        t0w, t0 = time.time(), time.perf_counter()
        statuses, ids, fire_s = fire(host, hport, "/hooks/mail", n)
        arrived = smtp.wait_for(n, 300)
        elapsed = time.perf_counter() - t0
        c1 = cpu_ticks(dm.pid)
        db = dm.db()
        runs = wait_runs(db, n, timeout=30)
        smtp.settle()
        after = delivery_statuses(db)
        dm.stop()
        left = outbox_count(d)
    smtp.stop()
    msgs = smtp.messages
    res.update(check_messages(msgs, n), statuses=statuses, runs=runs, after=after, outbox_left=left,
               arrived=arrived, elapsed=elapsed, rate=n / elapsed if arrived else 0,
               daemon_cpu=(c1 - c0) / CLK_TCK, connections=smtp.connections)
    if msgs:
        res["first_ms"] = (msgs[0][0] - t0w) * 1000
        res["span"] = msgs[-1][0] - msgs[0][0]
    print(f"  {n} POSTs {statuses} in {fire_s:.2f} s; all {n} messages at the server "
          f"{'after' if arrived else 'NOT within'} {elapsed:.2f} s = {res['rate']:.0f} messages/s "
          f"(first {res.get('first_ms', 0):.0f} ms after the first POST, first to last {res.get('span', 0):.2f} s)")
    print(f"  daemon CPU {res['daemon_cpu']:.2f} s ({res['daemon_cpu'] / elapsed * 100:.0f} % of the wall time, "
          f"{os.cpu_count()} cores)")
    print(f"  received {res['received']} ({res['distinct']} distinct Message-IDs, {res['dups']} duplicates) "
          f"over {res['connections']} SMTP connection(s); runs {runs}; deliveries {after}; outbox {left} .eml")
    return res


# --------------------------------------------------------------------------
# 3. heartbeat
# --------------------------------------------------------------------------

def last_run_id(d):
    path = os.path.join(d, ".routines", "routines.db")
    if not os.path.exists(path):
        return 0
    with sqlite3.connect(path, timeout=30) as db:
        return db.execute("SELECT COALESCE(MAX(id), 0) FROM runs").fetchone()[0]


def bench_heartbeat(binary, n):
    print(f"\n== heartbeat: {n} beats each outside active hours, with an empty checklist, without one ==",
          flush=True)
    smtp = SmtpServer()
    # A one-hour window six hours from now (UTC): now is outside it.
    h = (time.gmtime().tm_hour + 6) % 24
    away = f'active_hours: {{ start: "{h:02d}:00", end: "{(h + 1) % 24:02d}:00" }}\n  '
    res = {"phases": []}

    def project(d, active_hours, checklist):
        hb = ("heartbeat:\n  enabled: true\n  every: 30m\n  " + active_hours +
              "checklist: HEARTBEAT.md\n  ok_token: HEARTBEAT_OK\n"
              f"  deliver: [ {{ mail: {{ to: [{TO}], subject: Check-in }} }} ]\n")
        write_project(d, MODEL_PORT, {}, mail_config(smtp.port) + hb)
        path = os.path.join(d, "HEARTBEAT.md")
        if checklist is None:
            if os.path.exists(path):
                os.remove(path)
        else:
            with open(path, "w") as f:
                f.write(checklist)

    def beats(d, count):
        InstantModel.requests = 0
        m0 = smtp.count()
        walls, codes, out = [], {}, ""
        for _ in range(count):
            t0 = time.perf_counter()
            p = subprocess.run([binary, "heartbeat", "--json"], cwd=d, env=env_for(d),
                               capture_output=True, text=True)
            walls.append(time.perf_counter() - t0)
            codes[p.returncode] = codes.get(p.returncode, 0) + 1
            out = p.stdout
        smtp.settle(0.3)
        walls.sort()
        return InstantModel.requests, smtp.count() - m0, codes, walls, out

    def phase(d, label, hours, text, count):
        project(d, hours, text)
        before = last_run_id(d)
        calls, mails, codes, walls, last = beats(d, count)
        with sqlite3.connect(os.path.join(d, ".routines", "routines.db"), timeout=30) as db:
            rows = db.execute("SELECT status, COALESCE(reason, '-'), COUNT(*) FROM runs WHERE kind = 'heartbeat' "
                              "AND id > ? GROUP BY 1, 2", (before,)).fetchall()
            tokens, iterations = db.execute(
                "SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0), COALESCE(SUM(iterations), 0) "
                "FROM runs WHERE id > ?", (before,)).fetchone()
            recorded = db.execute("SELECT COUNT(*) FROM run_events WHERE kind = 'model_call' AND run_id > ?",
                                  (before,)).fetchone()[0]
        out = json.loads(last) if last.strip() else {}
        ph = {"label": label, "n": count, "calls": calls, "recorded_calls": recorded, "mails": mails,
              "codes": codes, "rows": rows, "tokens": tokens, "iterations": iterations,
              "skipped": sum(c for s, r, c in rows if s == "skipped" and r == "quiet"),
              "status": out.get("status"), "why": out.get("error"),
              "p50_ms": walls[len(walls) // 2] * 1000, "max_ms": walls[-1] * 1000}
        print(f"  {label:22}: model calls: {calls} (recorded model_call events: {recorded}); mails: {mails}; "
              f"runs {', '.join(f'{s}/{r}: {c}' for s, r, c in rows)}; tokens {tokens}; exit codes {codes}; "
              f"wall p50 {ph['p50_ms']:.1f} ms, max {ph['max_ms']:.1f} ms")
        if ph["why"]:
            print(f"  {'':22}  why (last beat): {ph['why']}")
        return ph

    with tempfile.TemporaryDirectory() as d:
        checklist = "- Is the disk below 90%?\n- Any failed backups?\n"
        res["phases"] = [
            phase(d, "outside active hours", away, checklist, n),
            phase(d, "empty checklist", "", "  \n\n", n),
            phase(d, "no checklist file", "", None, n),
        ]
        # Sanity: inside active hours (none set) with a checklist, a beat calls the model and,
        # the reply ("done") not being the ok token, mails it.
        res["sanity"] = phase(d, "active, with checklist", "", checklist, 1)
    smtp.stop()
    return res


# --------------------------------------------------------------------------
# 4. baseline: a raw client against the same server
# --------------------------------------------------------------------------

def raw_message(i):
    return (f"From: {FROM}\r\nTo: {TO}\r\nSubject: Report report run {i}\r\n"
            f"Message-ID: <baseline-{i}@example.com>\r\nDate: Mon, 23 Nov 2026 09:00:00 +0000\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Content-Transfer-Encoding: 7bit\r\n\r\ndone\r\n").encode()


def bench_baseline(n):
    import smtplib
    print(f"\n== baseline: a Python client, {n} messages over one connection to the same server ==", flush=True)
    res = {}

    def run(label, count, send):
        smtp = SmtpServer()
        c = smtplib.SMTP("127.0.0.1", smtp.port, local_hostname="localhost")
        c.ehlo()
        s0 = smtp.cpu_s()
        t0 = time.perf_counter()
        for i in range(count):
            send(c, i)
        wall = time.perf_counter() - t0
        smtp.wait_for(count, 10)
        s1 = smtp.cpu_s()
        c.quit()
        smtp.settle(0.3)
        smtp.stop()
        ok = check_messages(smtp.messages, count)
        res[label] = {"rate": count / wall, "wall": wall, "server_cpu": (s1 - s0) / wall, **ok}
        print(f"  {label:34}: {count} in {wall:.2f} s = {count / wall:5.0f} messages/s; server CPU "
              f"{(s1 - s0) / wall * 100:.0f} %; received {ok['received']} ({ok['dups']} duplicates)")

    def sendmail(c, i):
        c.sendmail("routines@example.com", [TO], raw_message(i))

    def lettre_like(c, i):
        # What lettre's pooled transport sends per message: NOOP (the pool's
        # connection check), MAIL, RCPT, DATA, the content, then "\r\n.\r\n"
        # in a write of its own.
        for cmd in ("NOOP", "MAIL FROM:<routines@example.com>", f"RCPT TO:<{TO}>", "DATA"):
            c.putcmd(cmd)
            code, _ = c.getreply()
            if code >= 400:
                raise RuntimeError(f"{cmd}: {code}")
        c.sock.sendall(raw_message(i).rstrip(b"\r\n"))
        c.sock.sendall(b"\r\n.\r\n")
        code, _ = c.getreply()
        if code != 250:
            raise RuntimeError(f"data: {code}")

    def nodelay(c, i):
        c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        lettre_like(c, i)

    run("smtplib sendmail", n, sendmail)
    # Nagle on stalls each message until the server's delayed ACK (40 ms on
    # Linux): a tenth of the messages tells as much.
    run("lettre's sequence, Nagle on", max(1, min(n, n // 10)), lettre_like)
    run("lettre's sequence, TCP_NODELAY", n, nodelay)
    return res


# --------------------------------------------------------------------------

MODEL_PORT = None


def main():
    global MODEL_PORT
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary")
    ap.add_argument("--only", choices=["retry", "live", "heartbeat", "baseline"])
    ap.add_argument("--messages", type=int, default=1000, help="mail deliveries in retry, live and baseline")
    ap.add_argument("--beats", type=int, default=100, help="heartbeat invocations per quiet case")
    ap.add_argument("--concurrency", type=int, default=8,
                    help="max_concurrent_runs of the daemon in the retry setup and the live scenario")
    ap.add_argument("--smtp-serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.smtp_serve is not None:
        smtp_serve(args.smtp_serve)
        return
    binary = args.binary
    if not binary:
        subprocess.run(["cargo", "build", "--release", "--locked", "-q"], cwd=ROOT, check=True)
        binary = os.path.join(ROOT, "target", "release", "routines")
    binary = os.path.abspath(binary)
    ensure_aiosmtpd()

    model = start_model()
    MODEL_PORT = model.server_address[1]
    t_all = time.perf_counter()
    retry = live = hb = base = None
    if args.only in (None, "retry"):
        retry = bench_retry(binary, args.messages, args.concurrency)
    if args.only in (None, "live"):
        live = bench_live(binary, args.messages, args.concurrency)
    if args.only in (None, "heartbeat"):
        hb = bench_heartbeat(binary, args.beats)
    if args.only in (None, "baseline"):
        base = bench_baseline(args.messages)
    model.shutdown()

    def verdict(ok):
        return "met" if ok else "MISSED"

    rows = []
    if retry:
        rows += [
            (f"deliver --retry, {retry['n']} mails", ">= 200 msg/s",
             f"{retry['rate']:.0f} msg/s ({retry['wall']:.2f} s)", verdict(retry["rate"] >= 200)),
            ("  arrived exactly once, all delivered", f"{retry['n']}, 0 dups",
             f"{retry['received']}, {retry['dups']} dups, db {retry['after']}",
             verdict(retry["exact"] and retry["after"] == {"delivered": retry["n"]} and retry["rc"] == 0
                     and retry["outbox_left"] == 0)),
        ]
    if live:
        rows += [
            (f"daemon, {live['n']} runs each mailing", "(figure)",
             f"{live['rate']:.0f} msg/s ({live['elapsed']:.2f} s)", ""),
            ("  arrived exactly once, all delivered", f"{live['n']}, 0 dups",
             f"{live['received']}, {live['dups']} dups, db {live['after']}",
             verdict(live["exact"] and live["after"] == {"delivered": live["n"]})),
        ]
    if hb:
        for ph in hb["phases"]:
            rows.append((f"quiet heartbeat: {ph['label']}", "0 model calls",
                         f"{ph['calls']} calls, {ph['mails']} mails, {ph['skipped']}/{ph['n']} skipped",
                         verdict(ph["calls"] == 0 and ph["recorded_calls"] == 0 and ph["mails"] == 0
                                 and ph["skipped"] == ph["n"])))
        s = hb["sanity"]
        rows.append(("  active beat (counter check)", "> 0 calls", f"{s['calls']} calls, {s['mails']} mail",
                     verdict(s["calls"] > 0 and s["recorded_calls"] == s["calls"] and s["mails"] == 1)))
    if base:
        for label, b in base.items():
            rows.append((f"baseline: {label}", "(figure)", f"{b['rate']:.0f} msg/s", ""))
    w = [max(len(r[i]) for r in rows) for i in range(4)]
    print(f"\nSummary ({time.perf_counter() - t_all:.0f} s in all; {os.cpu_count()} cores)")
    print(f"  {'target':<{w[0]}}  {'goal':<{w[1]}}  {'measured':<{w[2]}}  result")
    for r in rows:
        print(f"  {r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  {r[3]}")
    # Timings are figures; a lost or duplicated message or a quiet beat that
    # called the model is a failure.
    broken = [r[0].strip() for r in rows if r[3] == "MISSED" and not r[1].startswith(">=")]
    if broken:
        sys.exit("correctness check failed: " + "; ".join(broken))


if __name__ == "__main__":
    main()
