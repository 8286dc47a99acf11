#!/usr/bin/env bash
# Sets up routines on a fresh machine and runs a real routine end to end:
# builds the binary, starts a local model unless a provider is configured
# (ROUTINES_BASE_URL), scaffolds a demo folder with `routines init`, runs the
# `hello` routine there, and prints the report it delivered.
#
# Usage: scripts/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/quietly.sh

echo "==> Building routines (release; the compiler's output goes to a log)" >&2
quietly "$PWD/target/quickstart-build.log" "cargo build --release" cargo build --release --locked
BIN=$PWD/target/release/routines
DEMO=${ROUTINES_DEMO_DIR:-$PWD/demo}

if [ -z "${ROUTINES_BASE_URL:-}" ]; then
  echo "==> No provider configured (ROUTINES_BASE_URL is unset): starting the local model" >&2
  ROUTINES_BASE_URL=$(scripts/local-model.sh serve 8088)
  export ROUTINES_BASE_URL
  export ROUTINES_MODEL=${ROUTINES_MODEL:-qwen2.5-coder-1.5b}
fi

echo "==> Scaffolding $DEMO (existing files are kept)" >&2
"$BIN" init "$DEMO"
if [ ! -f "$DEMO/notes.md" ]; then
  cat >"$DEMO/notes.md" <<'MD'
# Release notes (internal)
The release of version 2.4 is planned for December 3.
The code word for the launch call is PELICAN-42.
MD
fi

echo "==> routines run hello (model at $ROUTINES_BASE_URL)" >&2
"$BIN" --config "$DEMO/routines.yaml" run hello
REPORT=$(ls -t "$DEMO"/reports/hello/*.md 2>/dev/null | head -1 || true)
if [ -n "$REPORT" ]; then
  echo >&2
  echo "==> The report it delivered: $REPORT" >&2
  cat "$REPORT"
fi
echo >&2
echo "==> Next: $BIN --config $DEMO/routines.yaml history | show RUN_ID | chat" >&2
echo "    Stop the local model: scripts/local-model.sh stop" >&2
