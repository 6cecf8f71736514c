"""Serving captures in Python: the iterations by kind (`Report.serving`) are the report's as
`ttap analyze` writes them, on the generated vLLM capture (`scripts/serving_trace.py`) and the
real vLLM and SGLang captures of the shared set; other traces have none."""

import pytest
import torchtraceap
from conftest import ROOT, trace, ttap_json

FIXTURE = ROOT / "tests" / "fixtures" / "vllm-serving.pt.trace.json"
REAL = {
    "AMD-AGI__TraceLens/tests__traces__b200__eager_trace.json.gz": "prefill",
    "AMD-AGI__TraceLens/tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz": "decode",
    "AMD-AGI__TraceLens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz": "decode",
    "AMD-AGI__TraceLens/tests__traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz": "mixed",
}


def check_as_cli(path):
    (cli,) = ttap_json("analyze", path)
    report = torchtraceap.analyze(path)
    assert report.json == cli["report"]
    kinds = cli["report"]["serving"]["kinds"]
    assert [k.json for k in report.serving] == kinds
    for k, entry in zip(report.serving, kinds):
        assert k.iterations == entry["time"]["n"]
        assert k.ms_per_iteration == entry["time"]["mean_ms"]
        assert k.tokens_per_s == entry["tokens_per_s"]
        assert f"serving {k.line()}" in report.summary()
        assert f"<td>{k.kind}</td>" in report._repr_html_()
    return report


def test_a_generated_vllm_capture_has_its_iterations_by_kind():
    report = check_as_cli(FIXTURE)
    assert [(k.kind, k.iterations) for k in report.serving] == [
        ("prefill", 2),
        ("decode", 6),
        ("mixed", 1),
    ]
    decode = report.serving[1]
    assert decode.graph_replays_per_iteration == 1.0
    assert 0.5 <= decode.host_gap_ms <= 0.63
    assert decode.tokens_per_s > 0
    assert decode.sd_ms > 0 and decode.min_ms <= decode.ms_per_iteration <= decode.max_ms


@pytest.mark.parametrize("name", sorted(REAL))
def test_a_real_serving_capture_has_its_iteration_typed(traces, name):
    report = check_as_cli(trace(traces, name))
    assert [(k.kind, k.iterations) for k in report.serving] == [(REAL[name], 1)]
    assert report.serving[0].host_gap_ms is None


def test_a_training_trace_has_no_serving_figures(traces):
    report = torchtraceap.analyze(
        trace(traces, "AMD-AGI__TraceLens/tests__traces__mi300__resnet_act_checkpoint.json.gz")
    )
    assert report.serving is None
    assert "\n  serving " not in report.summary()
