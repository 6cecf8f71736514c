"""Helpers for the package's tests: the shared real traces (skipped, saying why, when absent;
a failure with TTAP_REQUIRE_SHARED_TRACES set, as in CI) and the `ttap` binary of the same
checkout (`cargo build` puts it in target/debug), whose output the package must equal."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def shared_traces() -> Path:
    folder = Path(os.environ.get("TTAP_SHARED_TRACES", ROOT / ".." / "shared" / "traces"))
    if folder.is_dir():
        return folder
    why = f"{folder} is absent (set TTAP_SHARED_TRACES, or put the shared traces there)"
    if os.environ.get("TTAP_REQUIRE_SHARED_TRACES"):
        pytest.fail(f"TTAP_REQUIRE_SHARED_TRACES is set and {why}")
    pytest.skip(why)


@pytest.fixture
def traces() -> Path:
    return shared_traces()


def trace(traces: Path, name: str) -> Path:
    path = traces / name
    assert path.is_file(), f"{name} is missing from the shared traces"
    return path


def ttap_binary() -> Path:
    binary = Path(os.environ.get("TTAP_BIN", ROOT / "target" / "debug" / "ttap"))
    if not binary.is_file():
        pytest.fail(f"{binary} is absent: build it first (cargo build), or set TTAP_BIN")
    return binary


def ttap(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(ttap_binary()), *map(str, args)], capture_output=True, text=True, timeout=600
    )


def ttap_json(*args):
    out = ttap(*args, "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def copy_as(src: Path, folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    dst = folder / name
    shutil.copyfile(src, dst)
    return dst
