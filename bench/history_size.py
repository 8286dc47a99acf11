#!/usr/bin/env python3
"""The database size over a simulated month of a 20-second routine, with and without the
history limits (issue 50, item 3), and of the same month paused.

    python3 bench/history_size.py [--fires N] [--max-runs N] [--release]

Runs `examples/history_size.rs`, which writes each run through the store's own API as the
daemon does (claim, start, two model calls and a tool call, the end with output and tokens)
and prunes every simulated hour; see bench/README.md for the figures.
"""

import argparse
import subprocess
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fires", type=int, default=129_600, help="fires to simulate (default: 30 days)")
    parser.add_argument("--max-runs", type=int, default=1000, help="history.max_runs_per_routine")
    parser.add_argument("--release", action="store_true", help="build the example with optimisations")
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    command = ["cargo", "run", "--quiet", "--example", "history_size"]
    if args.release:
        command.append("--release")
    command += ["--", str(args.fires), str(args.max_runs)]
    return subprocess.run(command, cwd=root).returncode


if __name__ == "__main__":
    sys.exit(main())
