"""TorchTraceAP for Python: find performance anti-patterns in PyTorch profiler (Kineto) traces.

The analysis is the Rust library's (the same as ``ttap analyze`` and ``ttap compare``), run
locally; these are its results as Python objects, with a notebook display:

    import torchtraceap
    report = torchtraceap.analyze("trace.pt.trace.json.gz")
    report                      # a table of findings in a notebook
    report.findings[0].fix
    print(report.to_markdown())

``on_trace_ready(dir)`` is a drop-in for ``torch.profiler``'s ``on_trace_ready``.
"""

from __future__ import annotations

import html
import json
import os
import socket
import time
from typing import Any, Dict, List, Optional, Union

from . import _core
from ._core import DEFAULT_BASE_URL, TraceError

__all__ = [
    "analyze",
    "early",
    "compare",
    "on_trace_ready",
    "Report",
    "EarlyReport",
    "RunReport",
    "Finding",
    "ServingKind",
    "Comparison",
    "TraceError",
    "FindingsAtOrAbove",
    "DEFAULT_BASE_URL",
]
__version__ = _core.VERSION

PathLike = Union[str, "os.PathLike[str]"]
_SEVERITIES = ("low", "medium", "high")


class FindingsAtOrAbove(RuntimeError):
    """Raised by ``on_trace_ready(fail_on=...)`` when a finding is at least that severe (the
    gate of ``ttap analyze --fail-on``)."""


class Finding:
    """One ranked finding of a report; ``json`` holds all of it (evidence, gate, windows)."""

    def __init__(self, entry: Dict[str, Any]):
        self.json = entry

    id = property(lambda self: self.json["id"])
    title = property(lambda self: self.json["title"])
    summary = property(lambda self: self.json["summary"])
    severity = property(lambda self: self.json["severity"])
    ms_per_step = property(lambda self: self.json["impact_ms_per_step"])
    pct_of_step = property(lambda self: self.json["impact_pct_of_step"])
    confidence = property(lambda self: self.json["confidence"])
    fix = property(lambda self: self.json["fix"])
    fix_snippet = property(lambda self: self.json["fix_snippet"])
    module = property(lambda self: self.json.get("module"))
    evidence = property(lambda self: self.json["evidence"])

    def __repr__(self) -> str:
        return (
            f"<Finding {self.id} {self.severity}: {self.ms_per_step:.2f} ms/step "
            f"({self.pct_of_step:.1f} % of the step)>"
        )


class ServingKind:
    """A serving capture's iterations of one kind (``prefill``, ``decode``, ``mixed`` or
    ``untyped``): their count, time per iteration (mean, sample sd, min, max, in ms), the main
    GPU's busy share, the host time between one and the next iteration (mean ms; ``None`` when
    only the last is of this kind), graph replays per iteration, tokens per second (``None``
    where the tokens are not recorded). ``json`` holds the report's entry."""

    def __init__(self, entry: Dict[str, Any]):
        self.json = entry
        self.kind: str = entry["kind"] or "untyped"
        time = entry["time"]
        self.iterations: int = time["n"]
        self.ms_per_iteration: float = time["mean_ms"]
        self.sd_ms: float = time["sd_ms"]
        self.min_ms: float = time["min_ms"]
        self.max_ms: float = time["max_ms"]
        self.gpu_busy_pct: float = entry["gpu_busy_pct"]
        gap = entry.get("host_gap")
        self.host_gap_ms: Optional[float] = gap["mean_ms"] if gap else None
        self.graph_replays_per_iteration: float = entry["graph_replays_per_iteration"]
        self.tokens_per_s: Optional[float] = entry.get("tokens_per_s")

    def line(self) -> str:
        """The figures in one line, as ``Report.summary`` prints them."""
        gap = "-" if self.host_gap_ms is None else f"{self.host_gap_ms:.3f} ms"
        tokens = "-" if self.tokens_per_s is None else f"{self.tokens_per_s:.0f}"
        return (
            f"{self.kind}: {self.iterations} iteration(s), {self.ms_per_iteration:.3f} ± "
            f"{self.sd_ms:.3f} ms, GPU busy {self.gpu_busy_pct:.1f}%, host time between "
            f"iterations {gap}, {self.graph_replays_per_iteration:.1f} graph replays per "
            f"iteration, tokens/s {tokens}"
        )

    def __repr__(self) -> str:
        return f"<ServingKind {self.line()}>"


def _cell(value: Any) -> str:
    return f"<td>{html.escape(str(value))}</td>"


class Report:
    """One trace's report: ``file``, ``fingerprint``, ``findings``, ``split`` (the mean step's
    time per part, in ms), ``json`` (the report as ``ttap analyze --format json`` writes it)."""

    def __init__(self, entry: Dict[str, Any], markdown: str, link: Optional[str], link_error: Optional[str]):
        self.entry = entry
        self.file: str = entry["file"]
        self.fingerprint: str = entry["fingerprint"]
        self.json: Dict[str, Any] = entry["report"]
        self.findings: List[Finding] = [Finding(f) for f in self.json["findings"]]
        self.split: Dict[str, float] = {p["part"]: p["ms"] for p in self.json.get("split", [])}
        self.mean_step_ms: float = self.json["trace"]["mean_step_ms"]
        serving = self.json.get("serving")
        # A serving capture's iterations by kind (vLLM, SGLang, TGI); None for other traces.
        self.serving: Optional[List[ServingKind]] = (
            [ServingKind(k) for k in serving["kinds"]] if serving else None
        )
        self._markdown = markdown
        self._fragment = link
        self._link_error = link_error

    def to_json(self, indent: Optional[int] = 2) -> str:
        """The report as JSON (what a saved report holds; the web app opens it)."""
        return json.dumps(self.json, indent=indent)

    def to_markdown(self) -> str:
        """The Markdown of ``ttap analyze FILE`` (every string from the trace escaped)."""
        return self._markdown

    def link(self, base_url: str = DEFAULT_BASE_URL) -> str:
        """A link to this report in the web app: its figures in the fragment, never the trace
        (``ttap share FILE``)."""
        if self._fragment is None:
            raise TraceError(f"{self.file}: {self._link_error}")
        return f"{base_url}#{self._fragment}"

    def summary(self, base_url: str = DEFAULT_BASE_URL) -> str:
        """A few lines: the findings, worst first, and the link to the full report."""
        lines = [
            f"torchtraceap: {self.file}: {len(self.findings)} finding(s), "
            f"mean step {self.mean_step_ms:.2f} ms"
        ]
        for k in self.serving or []:
            lines.append(f"  serving {k.line()}")
        for f in self.findings:
            lines.append(f"  {f.severity:<6} {f.id:<28} {f.ms_per_step:8.2f} ms/step  {f.title}")
        if self._fragment is not None:
            lines.append(f"  full report: {self.link(base_url)}")
        else:
            lines.append(f"  no link: {self._link_error}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            "<tr>"
            + _cell(f.severity)
            + _cell(f"{f.title} ({f.id})")
            + _cell(f"{f.ms_per_step:.2f}")
            + _cell(f"{f.pct_of_step:.1f}")
            + _cell(f.fix)
            + "</tr>"
            for f in self.findings
        )
        head = (
            f"<p><b>{html.escape(self.file)}</b>: {len(self.findings)} finding(s), "
            f"mean step {self.mean_step_ms:.2f} ms</p>"
        )
        if self.serving:
            head += (
                "<table><thead><tr><th>iterations</th><th>count</th><th>ms per iteration</th>"
                "<th>GPU busy %</th><th>host ms between</th><th>graph replays</th>"
                "<th>tokens/s</th></tr></thead><tbody>"
                + "".join(
                    "<tr>"
                    + _cell(k.kind)
                    + _cell(k.iterations)
                    + _cell(f"{k.ms_per_iteration:.3f} ± {k.sd_ms:.3f}")
                    + _cell(f"{k.gpu_busy_pct:.1f}")
                    + _cell("-" if k.host_gap_ms is None else f"{k.host_gap_ms:.3f}")
                    + _cell(f"{k.graph_replays_per_iteration:.1f}")
                    + _cell("-" if k.tokens_per_s is None else f"{k.tokens_per_s:.0f}")
                    + "</tr>"
                    for k in self.serving
                )
                + "</tbody></table>"
            )
        if not self.findings:
            return head
        return (
            head
            + "<table><thead><tr><th>severity</th><th>finding</th><th>ms per step</th>"
            + "<th>% of step</th><th>fix</th></tr></thead><tbody>"
            + rows
            + "</tbody></table>"
        )

    def __repr__(self) -> str:
        return f"<Report {self.file}: {len(self.findings)} finding(s)>"


class RunReport:
    """Several traces (a folder, or the ranks of one job): ``reports`` (one ``Report`` each)
    and ``run``, the run view (per-rank step time, stragglers) as JSON, if any."""

    def __init__(self, analysis: Any, reports: List[Report]):
        self.json = json.loads(analysis.json)
        self.reports = reports
        self.run: Optional[Dict[str, Any]] = self.json.get("run") if isinstance(self.json, dict) else None
        self._markdown = analysis.markdown

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(self.json, indent=indent)

    def to_markdown(self) -> str:
        """The Markdown of ``ttap analyze FOLDER``: the run view, then each report."""
        return self._markdown

    def _repr_html_(self) -> str:
        return "".join(r._repr_html_() for r in self.reports)

    def __repr__(self) -> str:
        return f"<RunReport of {len(self.reports)} traces>"


def _analyze(path: PathLike, fail_on: Optional[str]):
    analysis = _core.analyze(os.fspath(path), fail_on)
    data = json.loads(analysis.json)
    entries = data["reports"] if isinstance(data, dict) else data
    reports = [
        Report(entry, md, fragment, why)
        for entry, md, (fragment, why) in zip(entries, analysis.reports_markdown, analysis.links)
    ]
    if isinstance(data, dict) or len(reports) != 1:
        return RunReport(analysis, reports), analysis.failed
    return reports[0], analysis.failed


def analyze(path_or_dir: PathLike) -> Union[Report, RunReport]:
    """Analyzes a trace (Kineto JSON, plain or gzip) as ``ttap analyze`` does: a ``Report``; or
    a folder of traces: a ``RunReport``. Raises ``TraceError`` with the CLI's message."""
    return _analyze(path_or_dir, None)[0]


class EarlyReport(Report):
    """The early look at a large plain trace (``ttap analyze --early``): the report of its first
    whole steps, read from part of the file, in well under the time the whole file takes. The
    whole file's report can differ. ``steps`` (the first and last step held whole),
    ``whole_steps``, ``read_bytes`` of ``file_bytes``. It has no fingerprint and no link:
    analyze the whole file for those."""

    def __init__(self, path: str, early: Any):
        super().__init__(
            {"file": path, "fingerprint": None, "report": json.loads(early.json)},
            early.markdown,
            None,
            "an early look has no link: analyze the whole file for one",
        )
        self.steps = tuple(early.steps)
        self.whole_steps: int = early.whole_steps
        self.read_bytes: int = early.read_bytes
        self.file_bytes: int = early.file_bytes

    def __repr__(self) -> str:
        return (
            f"<EarlyReport {self.file}: steps {self.steps[0]}-{self.steps[1]} "
            f"({self.whole_steps} whole) from {100 * self.read_bytes / self.file_bytes:.1f}% "
            f"of the file: {len(self.findings)} finding(s)>"
        )


def early(path: PathLike) -> Optional[EarlyReport]:
    """The early look at a large plain trace (64 MiB or more, not gzip): the findings of its
    first whole steps, from at most an eighth of the file, as ``ttap analyze --early`` gives
    them; ``None`` where it has none (small, gzip, no two whole steps within the budget).
    Raises ``TraceError`` where the file cannot be read."""
    found = _core.analyze_early(os.fspath(path))
    return None if found is None else EarlyReport(os.fspath(path), found)


class Comparison:
    """Two traces compared as ``ttap compare BEFORE AFTER`` does; ``json`` holds every figure."""

    def __init__(self, compared: Any):
        self.json: Dict[str, Any] = json.loads(compared.json)
        self.regression_pct: Optional[float] = compared.regression_pct
        self._text = compared.text
        self._markdown = compared.markdown

    def to_text(self) -> str:
        return self._text

    def to_markdown(self) -> str:
        return self._markdown

    def _repr_markdown_(self) -> str:
        return self._markdown

    def __str__(self) -> str:
        return self._text


def compare(
    before: PathLike,
    after: PathLike,
    batch_size: Optional[int] = None,
    *,
    batch_size_before: Optional[int] = None,
    batch_size_after: Optional[int] = None,
    top: int = 10,
) -> Comparison:
    """Compares two traces, or two folders each as its mean trace (``ttap compare``); batch
    sizes where the traces' input shapes do not tell them (samples/s)."""
    if batch_size is not None and (batch_size_before, batch_size_after) != (None, None):
        raise ValueError("batch_size: give it, or batch_size_before and batch_size_after, not both")
    before_size = batch_size if batch_size is not None else batch_size_before
    after_size = batch_size if batch_size is not None else batch_size_after
    return Comparison(_core.compare(os.fspath(before), os.fspath(after), before_size, after_size, top))


def on_trace_ready(
    dir_name: PathLike,
    fail_on: Optional[str] = None,
    *,
    worker_name: Optional[str] = None,
    use_gzip: bool = False,
    base_url: str = DEFAULT_BASE_URL,
):
    """A drop-in for ``torch.profiler.profile(on_trace_ready=...)``: writes the trace as
    ``torch.profiler.tensorboard_trace_handler(dir_name, worker_name, use_gzip)`` does,
    analyzes it, prints a summary with a link to the full report, and raises
    ``FindingsAtOrAbove`` when a finding is at least ``fail_on`` ("low", "medium", "high")."""
    if fail_on is not None and fail_on not in _SEVERITIES:
        raise ValueError(f"fail_on: {fail_on!r} is not a severity: use 'low', 'medium' or 'high'")

    def handler(prof) -> None:
        nonlocal worker_name
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as e:
            raise RuntimeError(f"Can't create directory: {dir_name}") from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        path = os.path.join(dir_name, file_name)
        prof.export_chrome_trace(path)
        report, failed = _analyze(path, fail_on)
        print(report.summary(base_url))
        if failed:
            at_least = _SEVERITIES[_SEVERITIES.index(fail_on) :]
            worst = ", ".join(f"{f.id} ({f.severity})" for f in report.findings if f.severity in at_least)
            raise FindingsAtOrAbove(f"{path}: findings at or above {fail_on}: {worst}")

    return handler
