#!/usr/bin/env python3
"""The fleet job on a local Ray cluster: 56 generated traces (7 data-parallel jobs of 8 ranks,
with anti-patterns injected on all ranks or on one straggler rank), checked three ways:

1. one summary per trace, each equal to the summary of `ttap analyze` run directly, without Ray;
2. the merged report equal to sums recomputed here from the per-trace lines, independently of
   `fleet.merge`;
3. the injected problems where they were injected: the job with a DataLoader stall on every rank
   has the most time lost to `dataloader-bottleneck`, and a straggler job's outlier rank (the
   one whose top finding the other ranks do not share) is the one it was injected on.

Skips, saying so loudly, where Ray is not installed (scripts/setup.sh installs it).

    python3 scripts/fleet/test_fleet.py [--ttap target/debug/ttap] [--ttap-dev target/debug/ttap-dev]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fleet  # noqa: E402

# (job, model, injections): every injection at steps 1-5 (`@rankR`: that rank only).
JOBS = [
    ("healthy-resnet", "resnet50", []),
    ("loader-all-ranks", "resnet50", ["dataloader-bottleneck:0.9"]),
    ("straggler-rank5", "resnet50", ["dataloader-bottleneck:0.9@rank5"]),
    ("sync-vit", "vit_b16", ["host-device-sync:0.8"]),
    ("alloc-swin", "swin_t", ["allocator-churn:0.8"]),
    ("healthy-detr", "detr", []),
    ("straggler-rank2", "vit_b16", ["dataloader-bottleneck:0.9@rank2"]),
]
RANKS = 8


def fail(message):
    print(f"FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def generate(ttap_dev, root):
    for seed, (job, model, injections) in enumerate(JOBS, start=1):
        args = [ttap_dev, "synth", "--model", model, "--ranks", str(RANKS), "--seed", str(seed),
                "--out", str(root / job)]
        for inj in injections:
            pattern, _, where = inj.partition("@")
            for step in range(1, 6):
                name, _, severity = pattern.partition(":")
                args += ["--inject", f"{name}@{step}:{severity}" + (f"@{where}" if where else "")]
        subprocess.run(args, check=True, capture_output=True)


def approx(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ttap", default="target/debug/ttap")
    parser.add_argument("--ttap-dev", default="target/debug/ttap-dev", help="the developers' CLI (its generator)")
    args = parser.parse_args()
    try:
        import ray  # noqa: F401
    except ImportError:
        print("SKIPPED: the fleet test needs Ray (`python3 -m pip install ray`; scripts/setup.sh "
              "installs it): the fleet job was NOT tested", file=sys.stderr)
        return
    ttap = str(Path(args.ttap).resolve())
    check(Path(ttap).is_file(), f"{ttap} is missing: build it (cargo build) first")
    ttap_dev = str(Path(args.ttap_dev).resolve())
    check(Path(ttap_dev).is_file(), f"{ttap_dev} is missing: build it (cargo build) first")
    # Ray keeps its session's logs and sockets under RAY_TMPDIR: a folder of this test's own
    # (short: a socket's path has at most 107 bytes), removed after the cluster stops.
    ray_tmp = tempfile.mkdtemp(prefix="ray-")
    os.environ["RAY_TMPDIR"] = ray_tmp
    try:
        test_on_ray(ttap, ttap_dev)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_on_ray(ttap, ttap_dev):
    import ray

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "traces"
        generate(ttap_dev, root)
        # One file that is not a trace: reported as not read, never dropped silently.
        (root / "broken").mkdir()
        (root / "broken" / "notes.json").write_text('{"hello": "world"}')
        out = Path(tmp) / "fleet"
        summaries, merged = fleet.run(root, out, ttap, batch=4)

        # 1. One line per trace, each the summary of a direct run.
        lines = [json.loads(l) for l in (out / "per-trace.jsonl").read_text().splitlines()]
        expected = fleet.trace_paths(root)
        check(len(expected) == len(JOBS) * RANKS + 1, f"{len(expected)} files generated")
        check([l["trace"] for l in lines] == expected, "per-trace.jsonl does not list every trace once, sorted")
        check(lines == summaries, "per-trace.jsonl differs from the summaries returned")
        direct = fleet.analyze_batch(ttap, root, expected)
        check(lines == direct, "a summary made on Ray differs from `ttap analyze` run directly")
        ok = [l for l in lines if l["error"] is None]
        check(len(ok) == len(JOBS) * RANKS, f"{len(ok)} traces analyzed")
        check([l["trace"] for l in lines if l["error"]] == ["broken/notes.json"], "the broken file is not reported")
        check(all(l["fingerprint"].startswith("fp1-") for l in ok), "a summary lacks its fingerprint")

        # 2. The merged report against sums recomputed from the lines.
        report = json.loads((out / "fleet.json").read_text())
        check(report["format"] == "torchtraceap.fleet" and report["version"] == 1, "format")
        check(report["traces"] == len(lines) and report["analyzed"] == len(ok), "trace counts")
        totals = defaultdict(float)
        counts = defaultdict(int)
        for l in ok:
            for f in l["findings"]:
                totals[f["id"]] += f["ms_per_step"] * l["steps"]
                counts[f["id"]] += 1
        check({a["id"] for a in report["anti_patterns"]} == set(totals), "anti-patterns listed")
        for a in report["anti_patterns"]:
            check(approx(a["ms_total"], totals[a["id"]]), f"{a['id']}: {a['ms_total']} ms, recomputed {totals[a['id']]}")
            check(a["traces"] == counts[a["id"]], f"{a['id']}: trace count")
        check([a["ms_total"] for a in report["anti_patterns"]] == sorted(totals.values(), reverse=True),
              "anti-patterns are not ranked by time lost")
        check(len(report["worst_traces"]) == len(ok), "every analyzed trace is ranked")
        per_trace = {l["trace"]: sum(f["ms_per_step"] for f in l["findings"]) for l in ok}
        worst = max(per_trace, key=lambda t: (per_trace[t], t))
        check(report["worst_traces"][0]["trace"] == worst, "the worst trace")
        for j in report["jobs"]:
            mine = [t for t in ok if t["job"] == j["job"]]
            check(j["traces"] == len(mine), f"{j['job']}: trace count")
            check(approx(j["recoverable_ms_per_step"], sum(per_trace[t["trace"]] for t in mine)), f"{j['job']}: total")
        md = (out / "fleet.md").read_text()
        check("## Anti-patterns by time lost across the fleet" in md and "broken/notes" in md.replace("\\", ""),
              "fleet.md")

        # 3. The injected problems where they were injected.
        loader = defaultdict(float)
        for l in ok:
            for f in l["findings"]:
                if f["id"] == "dataloader-bottleneck":
                    loader[l["job"]] += f["ms_per_step"]
        check(loader and max(loader, key=loader.get) == "loader-all-ranks",
              f"DataLoader time by job: {dict(loader)}")
        jobs = {j["job"]: j for j in report["jobs"]}
        for job, rank in [("straggler-rank5", 5), ("straggler-rank2", 2)]:
            # The straggler shows the cause, the other ranks the wait it causes.
            check(jobs[job]["outlier_ranks"] == [rank], f"{job}: outlier ranks {jobs[job]['outlier_ranks']}, injected on {rank}")
            check(jobs[job]["anti_patterns"].get("dataloader-bottleneck") == [rank],
                  f"{job}: DataLoader stalls found on ranks {jobs[job]['anti_patterns']}")
        for job in ["loader-all-ranks", "healthy-resnet", "healthy-detr"]:
            check(jobs[job]["outlier_ranks"] == [], f"{job}: outlier ranks {jobs[job]['outlier_ranks']}")
        ray.shutdown()
    print(f"fleet test: {len(lines)} traces on a local Ray cluster; per-trace summaries equal direct runs; "
          f"merged report equal to the recomputed sums; {len(report['anti_patterns'])} anti-patterns ranked")


if __name__ == "__main__":
    main()
