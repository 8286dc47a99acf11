#!/usr/bin/env bash
# Sets up routines on a fresh machine and runs a real agent session end to end:
# builds the binary, starts a local model unless a provider is configured
# (ROUTINES_BASE_URL), writes a demo workspace, and asks the agent a question
# it can only answer by reading a file with its file_read tool.
#
# Usage: scripts/quickstart.sh ["your question"]
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> Building routines (release)" >&2
cargo build --release --locked
BIN=$PWD/target/release/routines
DEMO=${ROUTINES_DEMO_DIR:-$PWD/demo}

if [ -z "${ROUTINES_BASE_URL:-}" ]; then
  echo "==> No provider configured (ROUTINES_BASE_URL is unset): starting the local model" >&2
  ROUTINES_BASE_URL=$(scripts/local-model.sh serve 8088)
  export ROUTINES_BASE_URL
  export ROUTINES_MODEL=${ROUTINES_MODEL:-qwen2.5-coder-1.5b}
fi

mkdir -p "$DEMO"
if [ ! -f "$DEMO/routines.yaml" ]; then
  cat >"$DEMO/routines.yaml" <<'YAML'
# Demo engine config. The provider comes from ROUTINES_BASE_URL / ROUTINES_MODEL
# (see scripts/quickstart.sh); everything else is relative to this folder.
provider:
  model: qwen2.5-coder-1.5b
  temperature: 0
agent:
  autonomy: supervised
  max_iterations: 6
YAML
fi
if [ ! -f "$DEMO/notes.md" ]; then
  cat >"$DEMO/notes.md" <<'MD'
# Release notes (internal)
The release of version 2.4 is planned for December 3.
The code word for the launch call is PELICAN-42.
MD
fi

QUESTION=${1:-"Read notes.md with file_read, then tell me the release date and the code word."}
echo "==> routines chat (model at $ROUTINES_BASE_URL)" >&2
echo "you> $QUESTION" >&2
echo "$QUESTION" | "$BIN" --config "$DEMO/routines.yaml" chat
echo >&2
echo "==> Done. Talk to it yourself:  $BIN --config $DEMO/routines.yaml chat" >&2
echo "    Stop the local model:       scripts/local-model.sh stop" >&2
