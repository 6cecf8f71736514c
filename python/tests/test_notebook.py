"""The notebook display: an HTML table of findings with severity, time and fix, where every
string from a trace or report is escaped."""

import copy

import torchtraceap
from conftest import copy_as, trace

TRACE = "facebookresearch__param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker2_step_12.1694128201554.pt.trace.json"
HOSTILE = "<script>alert(1)</script>"


def test_the_table_lists_each_finding_with_severity_time_and_fix(traces):
    report = torchtraceap.analyze(trace(traces, TRACE))
    page = report._repr_html_()
    assert page.count("<tr>") == len(report.findings) + 1
    for f in report.findings:
        assert f"<td>{f.severity}</td>" in page
        assert f"<td>{f.ms_per_step:.2f}</td>" in page


def test_a_trace_name_and_report_text_are_shown_as_text_never_markup(traces, tmp_path):
    path = copy_as(trace(traces, TRACE), tmp_path, "<img src=x onerror=alert(1)>.json")
    report = torchtraceap.analyze(path)
    entry = copy.deepcopy(report.entry)
    entry["report"]["findings"][0]["title"] = HOSTILE
    entry["report"]["findings"][0]["fix"] = "a & b <b>bold</b>"
    hostile = torchtraceap.Report(entry, report.to_markdown(), None, "no link")
    page = hostile._repr_html_()
    assert "<script" not in page and "<img" not in page and "<b>bold" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;.json" in page
    assert "a &amp; b &lt;b&gt;bold&lt;/b&gt;" in page
