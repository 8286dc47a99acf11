#!/usr/bin/env python3
"""Three `routines daemon` nodes on one PostgreSQL database (SPEC §12).

10,000 routines (the same files on every node) with `at:` the same instant; each node
has its own folder and data folder, all share the database and an in-process, instant
OpenAI-compatible model (bench/daemon_bench.py). It prints, from the database:

  claims/s        instants claimed per second: the routines over the time from the instant
                  until the database holds a run of every one (polled every 20 ms);
  claim lateness  created_at - scheduled_for, p50/p99/max;
  start lateness  started_at - scheduled_for, p50/p99/max (includes waiting for a slot);
  exactly once    one run per routine, no duplicate instant;
  spread          how many runs each node ran.

It asserts nothing about timings. PostgreSQL comes from Debian's package (initdb into a
temporary folder, a private port; as root the server runs as `nobody`).

Usage: python3 bench/cluster_bench.py [--binary PATH] [--routines N] [--nodes N] [--mcr N]
"""
import argparse
import datetime as dt
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_bench import ROOT, Daemon, parse_db_time, pct, start_model, write_project  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    """A throwaway PostgreSQL server: initdb into a temp folder, a private port."""

    def __init__(self):
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            sys.exit("PostgreSQL is not installed: apt-get install postgresql")
        self.bin = os.path.dirname(found[-1])
        self.dir = tempfile.mkdtemp(prefix="routines-pg-")
        self.port = free_port()
        as_user = None
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(self.dir, nobody.pw_uid, nobody.pw_gid)
            as_user = lambda: (os.setgid(nobody.pw_gid), os.setuid(nobody.pw_uid))  # noqa: E731
        data = os.path.join(self.dir, "data")
        subprocess.run([f"{self.bin}/initdb", "-D", data, "-U", "postgres", "-A", "trust"],
                       check=True, stdout=subprocess.DEVNULL, preexec_fn=as_user, cwd=self.dir)
        self.proc = subprocess.Popen(
            [f"{self.bin}/postgres", "-D", data, "-p", str(self.port), "-k", self.dir, "-c", "listen_addresses=127.0.0.1",
             "-c", "max_connections=200", "-c", "fsync=on"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=as_user, cwd=self.dir)
        for _ in range(300):
            if subprocess.run([f"{self.bin}/pg_isready", "-h", "127.0.0.1", "-p", str(self.port)],
                              stdout=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(0.1)
        subprocess.run([f"{self.bin}/createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "bench"],
                       check=True)
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/bench"

    def query(self, sql):
        out = subprocess.run([f"{self.bin}/psql", self.url, "-At", "-F", "\t", "-c", sql],
                             check=True, capture_output=True, text=True).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)
        shutil.rmtree(self.dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary")
    ap.add_argument("--routines", type=int, default=10_000)
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--mcr", type=int, default=64, help="limits.max_concurrent_runs of each node")
    ap.add_argument("--lead", type=float, default=60.0, help="seconds from the start to the instant")
    args = ap.parse_args()
    binary = args.binary
    if not binary:
        subprocess.run(["cargo", "build", "--release", "--locked", "-q"], cwd=ROOT, check=True)
        binary = os.path.join(ROOT, "target", "release", "routines")
    binary = os.path.abspath(binary)

    pg = Postgres()
    model = start_model()
    n = args.routines
    at = dt.datetime.fromtimestamp(int(time.time() + args.lead), dt.timezone.utc)
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    routines = {f"c{i:05d}": f"prompt: Say done.\non:\n  - at: {stamp}\nagent: {{ tools: [] }}\n" for i in range(n)}
    print(f"== cluster: {n} routines due at {stamp}, {args.nodes} nodes, max_concurrent_runs {args.mcr} each ==",
          flush=True)
    dirs, nodes = [], []
    try:
        for i in range(args.nodes):
            d = tempfile.mkdtemp(prefix=f"routines-node{i}-")
            dirs.append(d)
            write_project(d, model.server_address[1], routines,
                          f"limits: {{ shutdown_grace: 1s, max_concurrent_runs: {args.mcr} }}\n")
            t0 = time.perf_counter()
            node = Daemon(binary, d, env={"ROUTINES_DATABASE_URL": pg.url})
            node.wait_ready(timeout=args.lead)
            print(f"  node {i} ready in {time.perf_counter() - t0:.1f} s", flush=True)
            nodes.append(node)
        margin = at.timestamp() - time.time()
        if margin < 1:
            sys.exit(f"the nodes were ready {-margin:.1f} s after the instant; raise --lead")
        # Every instant claimed: when the database holds a run of every routine.
        time.sleep(max(0.0, at.timestamp() - time.time()))
        claimed_after = None
        while claimed_after is None and time.time() < at.timestamp() + 120:
            (count,), = pg.query("SELECT COUNT(*) FROM runs")
            if int(count) >= n:
                claimed_after = time.time() - at.timestamp()
            time.sleep(0.02)
        deadline = at.timestamp() + 300
        while time.time() < deadline:
            time.sleep(0.5)
            (left, total), = pg.query("SELECT COUNT(*) FILTER (WHERE status IN ('queued', 'running')), COUNT(*) FROM runs")
            if int(total) >= n and int(left) == 0:
                break
        rows = pg.query("SELECT routine, scheduled_for, created_at, started_at, finished_at, status, owner FROM runs "
                        "WHERE trigger = 'at'")
        (dups,), = pg.query("SELECT COUNT(*) FROM (SELECT 1 FROM runs GROUP BY routine, scheduled_for "
                            "HAVING COUNT(*) > 1) d")
        statuses = dict(pg.query("SELECT status, COUNT(*) FROM runs GROUP BY status"))
    finally:
        for node in nodes:
            node.stop()
        model.shutdown()
        pg.stop()
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)

    claim = [(parse_db_time(r[2]) - parse_db_time(r[1])).total_seconds() * 1000 for r in rows]
    start = [(parse_db_time(r[3]) - parse_db_time(r[1])).total_seconds() * 1000 for r in rows if r[3]]
    spread = {}
    for r in rows:
        spread[r[6] or "-"] = spread.get(r[6] or "-", 0) + 1
    print(f"  runs: {len(rows)} ({len({r[0] for r in rows})} routines, {dups} duplicate instants); statuses {statuses}")
    if claimed_after is not None:
        print(f"  claims: all {n} visible in the database {claimed_after:.2f} s after the instant "
              f"(polled every 20 ms): {n / max(claimed_after, 1e-3):.0f} claims/s")
    for what, vals in (("claim lateness", claim), ("start lateness", start)):
        if vals:
            print(f"  {what:15} p50 {pct(vals, 50):8.1f} ms  p99 {pct(vals, 99):8.1f} ms  max {max(vals):8.1f} ms")
    print(f"  runs per node: {sorted(spread.values(), reverse=True)}")


if __name__ == "__main__":
    main()
