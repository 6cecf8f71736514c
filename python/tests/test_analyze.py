"""`analyze` on the shared real traces equals `ttap analyze` (the whole report, its ids and
figures, its Markdown); a folder gets the CLI's run view; bad input raises `TraceError` with
the CLI's message, never a panic."""

import json

import pytest
import torchtraceap
from conftest import copy_as, trace, ttap, ttap_json

PARAM = "facebookresearch__param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker{}_step_12.{}.pt.trace.json"
RANKS = {2: "1694128201554", 6: "1694128201553", 7: "1694128201553"}
REAL = [
    PARAM.format(2, RANKS[2]),
    "haraldger__High-Performance-Deep-Learning/vgg16_trace.json",
    "facebookresearch__HolisticTraceAnalysis/tests__data__timeline_analysis__sampled_rank-0.json.gz",
    "local__torch-2.15-cpu/resnet18_train_step_cpu.pt.trace.json.gz",
    "AMD-AGI__TraceLens/tests__traces__mi300__resnet_act_checkpoint.json.gz",
]


@pytest.mark.parametrize("name", REAL)
def test_a_real_trace_reports_what_ttap_analyze_reports(traces, name):
    path = trace(traces, name)
    (cli,) = ttap_json("analyze", path)
    report = torchtraceap.analyze(path)
    assert isinstance(report, torchtraceap.Report)
    assert report.json == cli["report"]
    assert report.fingerprint == cli["fingerprint"]
    assert [(f.id, f.severity, f.ms_per_step, f.pct_of_step) for f in report.findings] == [
        (f["id"], f["severity"], f["impact_ms_per_step"], f["impact_pct_of_step"])
        for f in cli["report"]["findings"]
    ]
    assert report.split == {p["part"]: p["ms"] for p in cli["report"]["split"]}
    assert json.loads(report.to_json()) == cli["report"]
    assert report.to_markdown() + "\n" == ttap("analyze", path).stdout


def test_the_findings_of_a_real_trace_have_their_fixes(traces):
    report = torchtraceap.analyze(trace(traces, PARAM.format(2, RANKS[2])))
    ids = [f.id for f in report.findings]
    assert "host-device-sync" in ids and len(ids) == 5, ids
    assert all(f.fix and f.title and f.ms_per_step > 0 for f in report.findings)


def test_a_folder_of_ranks_gets_the_run_view_of_ttap_analyze(traces, tmp_path):
    for rank, stamp in RANKS.items():
        copy_as(trace(traces, PARAM.format(rank, stamp)), tmp_path, f"worker{rank}.json")
    cli = ttap_json("analyze", tmp_path)
    run = torchtraceap.analyze(tmp_path)
    assert isinstance(run, torchtraceap.RunReport)
    assert run.json == cli
    assert run.run == cli["run"] and run.run["findings"] is not None
    assert [r.json for r in run.reports] == [r["report"] for r in cli["reports"]]
    assert run.to_markdown() == ttap("analyze", tmp_path).stdout


def test_a_cut_trace_keeps_its_complete_events_as_the_cli_does(traces, tmp_path):
    whole = trace(traces, "haraldger__High-Performance-Deep-Learning/vgg16_trace.json")
    cut = tmp_path / "cut.json"
    cut.write_bytes(whole.read_bytes()[:200_000])
    (cli,) = ttap_json("analyze", cut)
    assert torchtraceap.analyze(cut).json == cli["report"]


def cli_error(path) -> str:
    out = ttap("analyze", path)
    assert out.returncode == 2, out
    assert out.stderr.startswith("error: "), out.stderr
    return out.stderr[len("error: ") :].rstrip("\n")


@pytest.mark.parametrize(
    "name, content, says",
    [
        ("missing.json", None, "No such file"),
        ("not-kineto.json", b'{"a": 1}', 'without "traceEvents"'),
        ("cut-short.json", b'{"traceEvents": [{"ph": "X", "na', "no timed event"),
        ("damaged.json.gz", b"\x1f\x8b\x08\x00garbage", "gzip data is damaged"),
    ],
)
def test_bad_input_raises_the_cli_message(tmp_path, name, content, says):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(torchtraceap.TraceError) as raised:
        torchtraceap.analyze(path)
    assert str(raised.value) == cli_error(path)
    assert says in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_an_empty_folder_raises_the_cli_message(tmp_path):
    with pytest.raises(torchtraceap.TraceError, match="no .json or .gz trace in this folder"):
        torchtraceap.analyze(tmp_path)
