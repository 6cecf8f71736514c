#!/usr/bin/env bash
# Set up the toolchain if needed, then build the TorchTraceAP site with Trunk (release: the parser
# is the hot loop) and serve it on http://127.0.0.1:8080/. Trunk rebuilds and reloads the page when
# a file outside target/ changes. Stop with Ctrl-C.
set -euo pipefail

ADDRESS=127.0.0.1
PORT=8080

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh

# Trunk finds wasm-opt (binaryen, from npm) and wasm-bindgen (cargo install) on PATH.
export PATH="$PWD/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
# Trunk 0.21 accepts only true/false here; the check itself would need the network.
export TRUNK_SKIP_VERSION_CHECK=true

# Trunk.toml tells Trunk's watcher to ignore target/, and Trunk refuses ignore paths that do not exist.
mkdir -p target

echo "serve: building the site, then serving it at http://$ADDRESS:$PORT/ (the sample trace is one click away)"
# Trunk 0.21 exits with an error when NO_COLOR is set to anything but true/false, so drop it.
exec env -u NO_COLOR trunk serve --release --offline --locked --address "$ADDRESS" --port "$PORT"
