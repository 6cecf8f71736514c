"""`early` on a generated trace over 64 MiB (ResNet-50 training, 160 steps, a DataLoader stall
and SIMT fp32 GEMMs injected in every step): what `ttap analyze --early` gives, both
anti-patterns named from at most an eighth of the file; a gzip or small trace has none."""

import gzip
import os
import subprocess
from pathlib import Path

import pytest
import torchtraceap
from conftest import ROOT, ttap, ttap_json

STEPS = 160


@pytest.fixture(scope="module")
def large(tmp_path_factory) -> Path:
    dev = Path(os.environ.get("TTAP_DEV", ROOT / "target" / "debug" / "ttap-dev"))
    if not dev.is_file():
        pytest.fail(f"{dev} is absent: build it first (cargo build), or set TTAP_DEV")
    path = tmp_path_factory.mktemp("early") / "large.pt.trace.json"
    inject = [
        arg
        for step in range(STEPS)
        for pattern in ("dataloader-bottleneck", "fp32-without-tensor-cores")
        for arg in ("--inject", f"{pattern}@{step}:0.6")
    ]
    made = subprocess.run(
        [str(dev), "synth", "--steps", str(STEPS), "--seed", "3", *inject, "--out", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert made.returncode == 0, made.stderr
    assert path.stat().st_size >= 64 << 20
    return path


def test_the_early_look_is_the_clis_and_names_what_every_step_holds(large):
    found = torchtraceap.early(large)
    assert isinstance(found, torchtraceap.EarlyReport)
    assert found.json == ttap_json("analyze", "--early", large)
    assert found.to_markdown() == ttap("analyze", "--early", large).stdout
    assert found.file_bytes == large.stat().st_size
    assert 0 < found.read_bytes <= found.file_bytes / 8
    assert found.whole_steps >= 2
    assert found.steps[1] - found.steps[0] + 1 >= found.whole_steps
    ids = {f.id for f in found.findings}
    assert {"dataloader-bottleneck", "fp32-without-tensor-cores"} <= ids
    assert found.fingerprint is None
    with pytest.raises(torchtraceap.TraceError, match="no link"):
        found.link()
    assert "whole" in repr(found)


def test_a_gzip_or_small_trace_has_no_early_look(large, tmp_path):
    packed = tmp_path / "large.pt.trace.json.gz"
    with open(large, "rb") as src, gzip.open(packed, "wb", compresslevel=1) as dst:
        dst.write(src.read())
    assert torchtraceap.early(packed) is None
    small = tmp_path / "small.pt.trace.json"
    small.write_bytes(large.read_bytes()[: 1 << 20])
    assert torchtraceap.early(small) is None


def test_a_missing_file_raises_trace_error(tmp_path):
    with pytest.raises(torchtraceap.TraceError, match="absent.json"):
        torchtraceap.early(tmp_path / "absent.json")
