"""`on_trace_ready`, tested with a stand-in for torch.profiler's `prof` (the `torch` wheel and
its CUDA libraries are too big for CI): its `export_chrome_trace(path)` copies a recorded real
trace, as the profiler would write it. The hook names the file as `tensorboard_trace_handler`
does, prints the link `ttap share` prints, and gates as `ttap analyze --fail-on` does."""

import re
import shutil

import pytest
import torchtraceap
from conftest import trace, ttap

DLRM = "facebookresearch__param/et_replay__tests__inputs__dlrm_kineto.tar.gz__dlrm_kineto__worker2_step_12.1694128201554.pt.trace.json"
RESNET_CPU = "local__torch-2.15-cpu/resnet18_train_step_cpu.pt.trace.json.gz"


class RecordedProfiler:
    """What the hook calls of `torch.profiler.profile`: `export_chrome_trace(path)`."""

    def __init__(self, recorded):
        self.recorded = recorded

    def export_chrome_trace(self, path):
        shutil.copyfile(self.recorded, path)


def test_the_hook_writes_analyzes_and_prints_the_share_link(traces, tmp_path, capsys):
    log = tmp_path / "log"
    torchtraceap.on_trace_ready(log, worker_name="w0")(RecordedProfiler(trace(traces, DLRM)))
    (written,) = log.iterdir()
    assert re.fullmatch(r"w0\.\d{19}\.pt\.trace\.json", written.name), written.name
    printed = capsys.readouterr().out
    link = ttap("share", written).stdout.strip()
    assert link.startswith(torchtraceap.DEFAULT_BASE_URL + "#ttap")
    assert f"full report: {link}\n" in printed + "\n"
    for f in torchtraceap.analyze(written).findings:
        assert f.id in printed


def test_the_default_name_is_the_host_and_process_and_gzip_is_kept(traces, tmp_path, capsys):
    import os
    import socket

    handler = torchtraceap.on_trace_ready(tmp_path, use_gzip=True)
    handler(RecordedProfiler(trace(traces, RESNET_CPU)))
    (written,) = tmp_path.iterdir()
    prefix = re.escape(f"{socket.gethostname()}_{os.getpid()}")
    assert re.fullmatch(prefix + r"\.\d{19}\.pt\.trace\.json\.gz", written.name), written.name
    assert "optimizer-not-fused" in capsys.readouterr().out


@pytest.mark.parametrize("fail_on", ["low", "medium", "high"])
def test_fail_on_gates_as_ttap_analyze_does(traces, tmp_path, fail_on):
    recorded = trace(traces, RESNET_CPU)
    cli = ttap("analyze", recorded, "--fail-on", fail_on).returncode
    assert cli in (0, 1)
    handler = torchtraceap.on_trace_ready(tmp_path / fail_on, fail_on)
    if cli == 1:
        with pytest.raises(torchtraceap.FindingsAtOrAbove, match="optimizer-not-fused"):
            handler(RecordedProfiler(recorded))
    else:
        handler(RecordedProfiler(recorded))
    assert (fail_on == "low") == (cli == 1), "the recorded trace's one finding is low"


def test_a_bad_severity_is_refused_before_profiling():
    with pytest.raises(ValueError, match="'severe' is not a severity"):
        torchtraceap.on_trace_ready("log", "severe")
