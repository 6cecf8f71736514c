"""`compare` on HTA's real before/after pair equals `ttap compare` in every format; batch sizes
and errors as the CLI's, on two small real CPU traces (a quicker pair)."""

import json

import pytest
import torchtraceap
from conftest import trace, ttap

HTA = "facebookresearch__HolisticTraceAnalysis/tests__data__trace_diff__{0}__{0}.json.gz"
CPU = "local__torch-2.15-cpu/{}.pt.trace.json.gz"


def small_pair(traces):
    return (
        trace(traces, CPU.format("resnet18_train_step_cpu")),
        trace(traces, CPU.format("vit_b16_inference_cpu_stack")),
    )


def test_a_real_pair_compares_as_ttap_compare_does(traces):
    before, after = trace(traces, HTA.format("control")), trace(traces, HTA.format("test"))
    c = torchtraceap.compare(before, after)
    assert c.json == json.loads(ttap("compare", before, after, "--format", "json").stdout)
    assert str(c) == ttap("compare", before, after).stdout
    assert c.to_markdown() == ttap("compare", before, after, "--format", "md").stdout
    assert c.json["gpu_work"]["changed"], "the pair's kernels changed"


def test_a_batch_size_is_used_as_the_cli_uses_it(traces):
    before, after = small_pair(traces)
    c = torchtraceap.compare(before, after, batch_size=32)
    cli = ttap("compare", before, after, "--batch-size", "32", "--format", "json").stdout
    assert c.json == json.loads(cli)


def test_batch_sizes_before_and_after_are_used_as_the_cli_uses_them(traces):
    before, after = small_pair(traces)
    c = torchtraceap.compare(before, after, batch_size_before=16, batch_size_after=64)
    cli = ttap(
        "compare", before, after, "--batch-size-before", "16", "--batch-size-after", "64",
        "--format", "json",
    ).stdout
    assert c.json == json.loads(cli)
    assert c.json != torchtraceap.compare(before, after, batch_size=16).json
    with pytest.raises(ValueError, match="not both"):
        torchtraceap.compare(before, after, batch_size=16, batch_size_after=64)


def test_a_missing_side_raises_the_cli_message(traces, tmp_path):
    before = small_pair(traces)[0]
    missing = tmp_path / "after.json"
    with pytest.raises(torchtraceap.TraceError) as raised:
        torchtraceap.compare(before, missing)
    out = ttap("compare", before, missing)
    assert out.returncode == 2
    assert "error: " + str(raised.value) + "\n" == out.stderr
