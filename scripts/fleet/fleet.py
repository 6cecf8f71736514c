#!/usr/bin/env python3
"""A fleet of traces on Ray: `ttap analyze` on every trace of a folder, as Ray tasks, then one
fleet report.

    python3 scripts/fleet/fleet.py TRACES_DIR --out OUT_DIR [--ttap target/release/ttap]
                                   [--address auto] [--batch 8]

Ray only schedules: each task runs the `ttap` CLI (the same Rust core as the web app) on a few
traces, one thread each (`TTAP_THREADS=1`: the cluster's cores are shared out by Ray), and turns
each trace's report into one compact summary (`summarize`). The driver writes them, sorted by
trace, to OUT_DIR/per-trace.jsonl and merges them (`merge`) into OUT_DIR/fleet.json (format
`torchtraceap.fleet`, version 1) and OUT_DIR/fleet.md: which anti-patterns cost the most time
across jobs, which jobs and ranks are worst. docs/FLEET.md describes both files and how to run
this on a real cluster.
"""

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

FORMAT = "torchtraceap.fleet"
VERSION = 1
TRACE_SUFFIXES = (".json", ".json.gz")
# Rows of each ranked table in the Markdown report (fleet.json keeps them all).
MARKDOWN_ROWS = 15


def trace_paths(root):
    """Every trace file under `root` (`*.json`, `*.json.gz`), relative, sorted."""
    root = Path(root)
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and p.name.endswith(TRACE_SUFFIXES)
    )


def job_of(rel):
    """The job a trace belongs to: its folder (the ranks of one run sit together), else its name."""
    parent = str(Path(rel).parent)
    return parent if parent != "." else Path(rel).name


def summarize(rel, entry):
    """The compact summary of one trace from its `ttap analyze --format json` entry."""
    report = entry["report"]
    trace = report["trace"]
    steps = len(report.get("steps", []))
    return {
        "trace": rel,
        "job": job_of(rel),
        "rank": trace.get("rank"),
        "world_size": trace.get("world_size"),
        "fingerprint": entry.get("fingerprint"),
        "steps": steps,
        "steady_steps": trace.get("steady_steps"),
        "mean_step_ms": trace.get("mean_step_ms"),
        "split_ms_per_step": {p["part"]: p["ms"] for p in report.get("split", [])},
        "findings": [
            {
                "id": f["id"],
                "severity": f["severity"],
                "ms_per_step": f["impact_ms_per_step"],
                "pct_of_step": f["impact_pct_of_step"],
                "confidence": f["confidence"],
            }
            for f in report.get("findings", [])
        ],
        "error": None,
    }


def analyze_batch(ttap, root, rels):
    """Runs `ttap analyze` on a few traces; one summary per trace (an error for unusable ones)."""
    env = dict(os.environ, TTAP_THREADS="1")
    paths = [str(Path(root) / rel) for rel in rels]
    done = subprocess.run(
        [ttap, "analyze", "--format", "json", *paths],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode not in (0, 1, 2):
        raise RuntimeError(f"ttap analyze failed ({done.returncode}): {done.stderr.strip()}")
    # A list of reports, or {"run": …, "reports": […]} when the batch holds ranks of one job.
    output = json.loads(done.stdout or "[]")
    reports = output["reports"] if isinstance(output, dict) else output
    entries = {str(Path(e["file"])): e for e in reports}
    messages = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    out = []
    for rel, path in zip(rels, paths):
        if path in entries:
            out.append(summarize(rel, entries[path]))
        else:
            said = next((m for m in messages if path in m), "error: not analyzed")
            out.append({"trace": rel, "job": job_of(rel), "error": said[len("error: "):]})
    return out


def recoverable_pct(summary):
    """The share of the step the trace's findings claim (they never overlap: at most 100)."""
    return min(100.0, sum(f["pct_of_step"] for f in summary["findings"]))


def outlier_ranks(traces):
    """The ranks of a job whose top finding fewer than half of its ranks share: where a straggler
    shows its cause (a DataLoader stall, say) while the other ranks show the wait it causes
    (exposed communication)."""
    tops = defaultdict(int)
    for t in traces:
        tops[t["top_finding"]] += 1
    return sorted(
        t["rank"] for t in traces
        if t["top_finding"] is not None and t["rank"] is not None and 2 * tops[t["top_finding"]] < len(traces)
    )


def merge(summaries):
    """The fleet report from the per-trace summaries."""
    ok = [s for s in summaries if s.get("error") is None]
    patterns = defaultdict(lambda: {"traces": 0, "jobs": set(), "ms_per_step": 0.0, "ms": 0.0,
                                    "severity": defaultdict(int)})
    for s in ok:
        for f in s["findings"]:
            p = patterns[f["id"]]
            p["traces"] += 1
            p["jobs"].add(s["job"])
            p["ms_per_step"] += f["ms_per_step"]
            # Time over the whole trace: per step, times the steps profiled.
            p["ms"] += f["ms_per_step"] * s["steps"]
            p["severity"][f["severity"]] += 1
    anti_patterns = sorted(
        (
            {
                "id": pid,
                "traces": p["traces"],
                "jobs": len(p["jobs"]),
                "ms_per_step_sum": p["ms_per_step"],
                "ms_total": p["ms"],
                "severity": dict(sorted(p["severity"].items())),
            }
            for pid, p in patterns.items()
        ),
        key=lambda a: (-a["ms_total"], a["id"]),
    )
    traces = sorted(
        (
            {
                "trace": s["trace"],
                "job": s["job"],
                "rank": s["rank"],
                "mean_step_ms": s["mean_step_ms"],
                "recoverable_pct": recoverable_pct(s),
                "recoverable_ms_per_step": sum(f["ms_per_step"] for f in s["findings"]),
                "top_finding": s["findings"][0]["id"] if s["findings"] else None,
            }
            for s in ok
        ),
        key=lambda t: (-t["recoverable_ms_per_step"], t["trace"]),
    )
    by_job = defaultdict(list)
    for t in traces:
        by_job[t["job"]].append(t)
    ranks_by_pattern = defaultdict(lambda: defaultdict(list))
    for s in ok:
        for f in s["findings"]:
            ranks_by_pattern[s["job"]][f["id"]].append(s["rank"])
    jobs = sorted(
        (
            {
                "job": job,
                "traces": len(ts),
                "recoverable_ms_per_step": sum(t["recoverable_ms_per_step"] for t in ts),
                "worst_rank": max(ts, key=lambda t: (t["recoverable_ms_per_step"], t["trace"]))["rank"],
                "slowest_rank": max(ts, key=lambda t: (t["mean_step_ms"] or 0.0, t["trace"]))["rank"],
                "mean_step_ms": sum(t["mean_step_ms"] or 0.0 for t in ts) / len(ts),
                "anti_patterns": {pid: sorted(r for r in ranks if r is not None)
                                  for pid, ranks in sorted(ranks_by_pattern[job].items())},
                "outlier_ranks": outlier_ranks(ts),
            }
            for job, ts in by_job.items()
        ),
        key=lambda j: (-j["recoverable_ms_per_step"], j["job"]),
    )
    split = defaultdict(float)
    for s in ok:
        for part, ms in s["split_ms_per_step"].items():
            split[part] += ms / len(ok)
    return {
        "format": FORMAT,
        "version": VERSION,
        "traces": len(summaries),
        "analyzed": len(ok),
        "failed": [{"trace": s["trace"], "error": s["error"]} for s in summaries if s.get("error") is not None],
        "anti_patterns": anti_patterns,
        "jobs": jobs,
        "worst_traces": traces,
        "mean_split_ms_per_step": dict(split),
    }


def fleet_json(fleet):
    """fleet.json's text: `format` and `version` first (as `merge` orders them), so that a
    reader (the web app) recognizes a fleet report from its first bytes, however long it is."""
    return json.dumps(fleet, indent=1) + "\n"


def md_cell(text):
    """A table cell from a trace's own text (file names): markup characters escaped."""
    out = []
    for ch in str(text):
        out.append("\\" + ch if ch in "\\`*_{}[]()<>#+-.!|~" else ch)
    return "".join(out).replace("\n", " ")


def markdown(fleet):
    lines = [
        "# Fleet report",
        "",
        f"{fleet['analyzed']} of {fleet['traces']} traces analyzed"
        + (f"; {len(fleet['failed'])} could not be read (listed at the end)." if fleet["failed"] else "."),
        "",
        "## Anti-patterns by time lost across the fleet",
        "",
        "| anti-pattern | traces | jobs | ms lost (all steps) | ms per step, summed |",
        "|---|---:|---:|---:|---:|",
    ]
    for a in fleet["anti_patterns"][:MARKDOWN_ROWS]:
        lines.append(f"| `{a['id']}` | {a['traces']} | {a['jobs']} | {a['ms_total']:.1f} | {a['ms_per_step_sum']:.2f} |")
    lines += ["", "## Worst jobs", "", "| job | traces | recoverable ms per step | worst rank | slowest rank | outlier ranks | mean step ms |",
              "|---|---:|---:|---:|---:|---|---:|"]
    for j in fleet["jobs"][:MARKDOWN_ROWS]:
        outliers = ", ".join(str(r) for r in j["outlier_ranks"])
        lines.append(f"| {md_cell(j['job'])} | {j['traces']} | {j['recoverable_ms_per_step']:.2f} | {j['worst_rank']} | {j['slowest_rank']} | {outliers} | {j['mean_step_ms']:.2f} |")
    lines += ["", "## Worst traces (ranks)", "", "| trace | rank | recoverable % of step | ms per step | top finding |",
              "|---|---:|---:|---:|---|"]
    for t in fleet["worst_traces"][:MARKDOWN_ROWS]:
        top = f"`{t['top_finding']}`" if t["top_finding"] else ""
        lines.append(f"| {md_cell(t['trace'])} | {t['rank']} | {t['recoverable_pct']:.1f} | {t['recoverable_ms_per_step']:.2f} | {top} |")
    if fleet["failed"]:
        lines += ["", "## Not read", ""]
        lines += [f"- {md_cell(f['trace'])}: {md_cell(f['error'])}" for f in fleet["failed"]]
    return "\n".join(lines) + "\n"


def run(root, out, ttap, batch, address=None):
    """Analyzes every trace under `root` on Ray and writes the three files into `out`."""
    import ray  # Imported here so that `merge` and `summarize` work without Ray installed.

    rels = trace_paths(root)
    if not rels:
        raise SystemExit(f"fleet: no *.json or *.json.gz trace under {root}")
    ttap = str(Path(ttap).resolve())
    root = str(Path(root).resolve())
    ray.init(address=address, include_dashboard=False, log_to_driver=False,
             ignore_reinit_error=True)
    task = ray.remote(num_cpus=1)(analyze_batch)
    batches = [rels[i:i + batch] for i in range(0, len(rels), batch)]
    results = ray.get([task.remote(ttap, root, b) for b in batches])
    summaries = sorted((s for r in results for s in r), key=lambda s: s["trace"])
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "per-trace.jsonl", "w") as f:
        for s in summaries:
            f.write(json.dumps(s, sort_keys=True, separators=(",", ":")) + "\n")
    fleet = merge(summaries)
    (out / "fleet.json").write_text(fleet_json(fleet))
    (out / "fleet.md").write_text(markdown(fleet))
    return summaries, fleet


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", help="a folder of traces (searched recursively)")
    parser.add_argument("--out", required=True, help="where per-trace.jsonl, fleet.json and fleet.md go")
    parser.add_argument("--ttap", default="target/release/ttap", help="the ttap CLI (on every node, at this path)")
    parser.add_argument("--address", default=None,
                        help="a Ray cluster to join ('auto' inside one, or ray://HOST:10001); default: a local one")
    parser.add_argument("--batch", type=int, default=8, help="traces per Ray task")
    args = parser.parse_args()
    summaries, fleet = run(args.traces, args.out, args.ttap, max(1, args.batch), args.address)
    print(f"fleet: {fleet['analyzed']} of {len(summaries)} traces analyzed; "
          f"report in {args.out}/fleet.md and {args.out}/fleet.json", file=sys.stderr)


if __name__ == "__main__":
    main()
