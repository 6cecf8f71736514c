#!/usr/bin/env bash
# Every test layer of TorchTraceAP, as CI runs it: formatting, lints, the Rust tests (unit,
# integration, the real traces of ../shared/traces checked against a Python oracle, the CLI),
# and the core's build for the browser (wasm32).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

step() { printf '\n== %s\n' "$*"; }

step "toolchain"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi
command -v python3 >/dev/null || { echo "test: python3 is needed for the shared-trace oracle" >&2; exit 1; }

step "cargo fmt --check"
cargo fmt --check

step "cargo clippy --all-targets -D warnings"
cargo clippy --all-targets --locked -- -D warnings

if [ -d ../shared/traces ] || [ -n "${TTAP_SHARED_TRACES:-}" ]; then
  echo "real traces: ${TTAP_SHARED_TRACES:-../shared/traces}"
else
  echo "SKIPPED: ../shared/traces is absent, so the real-trace tests will skip (set TTAP_SHARED_TRACES to run them)"
fi

step "cargo test"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
cargo test --locked 2>&1 | tee "$log"

step "the core builds for the browser (wasm32-unknown-unknown)"
cargo build --locked --lib --target wasm32-unknown-unknown

passed=$(grep -o '[0-9]* passed' "$log" | awk '{s+=$1} END {print s+0}')
failed=$(grep -o '[0-9]* failed' "$log" | awk '{s+=$1} END {print s+0}')
echo
echo "all test layers passed"
echo "tests: $passed passed, $failed failed"
