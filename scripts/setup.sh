#!/usr/bin/env bash
# Idempotent set-up of the web toolchain for TorchTraceAP on a Debian machine that already has
# rustup and cargo: the wasm32 target and Trunk 0.21.14. Pieces already installed are skipped.
#
# Trunk is compiled from source (no registry has a prebuilt one): expect 10-25 minutes the first time.
# Set CARGO_BUILD_JOBS to limit the parallel compile jobs on a busy machine.
set -euo pipefail

TRUNK_VERSION=0.21.14
WASM_TARGET=wasm32-unknown-unknown

# cargo installs binaries here; make them visible even when the shell profile was not sourced.
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

for tool in rustup cargo; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "setup: '$tool' not found; install Rust with rustup first (https://rustup.rs)" >&2
    exit 1
  fi
done

if rustup target list --installed | grep -qx "$WASM_TARGET"; then
  echo "setup: rust target $WASM_TARGET already installed, skipping"
else
  echo "setup: installing rust target $WASM_TARGET"
  rustup target add "$WASM_TARGET"
fi

installed_trunk=""
if command -v trunk >/dev/null 2>&1; then
  # `trunk --version` prints "trunk 0.21.14".
  installed_trunk="$(trunk --version 2>/dev/null | awk '{print $2}' || true)"
fi
if [[ "$installed_trunk" == "$TRUNK_VERSION" ]]; then
  echo "setup: trunk $TRUNK_VERSION already installed, skipping"
else
  echo "setup: installing trunk $TRUNK_VERSION (found: ${installed_trunk:-none}); this compiles from source"
  cargo install trunk --version "$TRUNK_VERSION" --locked
fi

echo "setup: done"
