#!/usr/bin/env bash
# Idempotent set-up of everything TorchTraceAP's site and tests need on a Debian machine that
# already has rustup, cargo and Node.js: the wasm32 target, Trunk, wasm-bindgen-cli at the version
# web/Cargo.toml pins, Debian's Chromium and ChromeDriver, and the Node packages (binaryen's
# wasm-opt, playwright-core). Pieces already installed at the right version are skipped.
#
# Trunk and wasm-bindgen-cli compile from source (no registry has them prebuilt): expect 15-20
# minutes the first time on two cores. Set CARGO_BUILD_JOBS to limit parallel compile jobs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

TRUNK_VERSION=0.21.14
# Must equal the `wasm-bindgen = "=X"` pin in web/Cargo.toml (and Trunk.toml's [tools]).
WASM_BINDGEN_VERSION=0.2.130
WASM_TARGET=wasm32-unknown-unknown
RAY_VERSION=2.60.0

# cargo installs binaries here; make them visible even when the shell profile was not sourced.
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

say() { echo "setup: $*"; }

# Installs Debian packages, through sudo unless this is root.
apt_install() {
  local sudo_cmd=()
  [[ "$(id -u)" == 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"
}

for tool in rustup cargo node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    say "'$tool' not found; install Rust with rustup (https://rustup.rs) and Node.js 20 first" >&2
    exit 1
  fi
done

if rustup target list --installed | grep -qx "$WASM_TARGET"; then
  say "rust target $WASM_TARGET already installed, skipping"
else
  say "installing rust target $WASM_TARGET"
  rustup target add "$WASM_TARGET"
fi

# Prints the version a tool reports as its second word ("trunk 0.21.14"), or nothing.
version_of() { command -v "$1" >/dev/null 2>&1 && "$1" --version 2>/dev/null | awk '{print $2}' || true; }

if [[ "$(version_of trunk)" == "$TRUNK_VERSION" ]]; then
  say "trunk $TRUNK_VERSION already installed, skipping"
else
  say "installing trunk $TRUNK_VERSION; this compiles from source"
  cargo install trunk --version "$TRUNK_VERSION" --locked
fi

if [[ "$(version_of wasm-bindgen)" == "$WASM_BINDGEN_VERSION" ]]; then
  say "wasm-bindgen-cli $WASM_BINDGEN_VERSION already installed, skipping"
else
  # Not --locked: its lock file names a webpki-roots version the registry no longer has.
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION; this compiles from source"
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
fi

if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]]; then
  say "chromium and chromedriver already installed, skipping"
else
  say "installing Debian's chromium and chromium-driver"
  apt_install chromium chromium-driver
fi

if [[ -x node_modules/.bin/wasm-opt && -d node_modules/playwright-core ]] \
  && node -e 'process.exit(require("./node_modules/binaryen/package.json").version === require("./package-lock.json").packages["node_modules/binaryen"].version ? 0 : 1)'; then
  say "node packages already installed, skipping"
else
  say "installing node packages (binaryen's wasm-opt, playwright-core)"
  npm ci --no-audit --no-fund
fi

# The Python package's test builds it in a virtual environment (target/pyenv): Debian's Python
# needs python3-venv for that.
if python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  say "python3 venv already installed, skipping"
else
  say "installing Debian's python3-venv"
  apt_install python3-venv
fi

# Ray, for the fleet job's test (scripts/fleet): a 79 MB wheel, about 240 MB installed, ~30 s.
# Where it cannot be installed the fleet test skips and says so; nothing else needs it.
if python3 -c 'import ray' >/dev/null 2>&1; then
  say "ray already installed, skipping"
elif python3 -m pip install --quiet "ray==$RAY_VERSION"; then
  say "installed ray $RAY_VERSION"
else
  say "could not install ray $RAY_VERSION with pip: the fleet test will skip" >&2
fi

say "done"
