#!/usr/bin/env python3
"""Independent oracle for the shared-trace tests: counts a trace's events with Python's stock
json module (not the project's parser).

Usage: count_events.py FILE...   Prints one JSON object: {file: counts or {"error": why}}.
"""
import gzip
import json
import sys
from collections import Counter

GPU_WORK = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
RUNTIME = {"cuda_runtime", "cuda_driver", "Runtime"}


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def count(path):
    doc = load(path)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    objects = [e for e in events if isinstance(e, dict)]
    categories = Counter(e.get("cat") or "" for e in objects)
    complete = [e for e in objects if e.get("ph") == "X"]
    by_group = Counter()
    for e in complete:
        cat, name = e.get("cat"), e.get("name", "")
        if cat in ("kernel", "Kernel"):
            by_group["kernels"] += 1
        elif cat in ("gpu_memcpy", "Memcpy"):
            by_group["memcpy"] += 1
        elif cat in ("gpu_memset", "Memset"):
            by_group["memset"] += 1
        elif cat in RUNTIME:
            by_group["runtime"] += 1
        elif cat == "python_function":
            by_group["python"] += 1
        elif cat in ("cpu_op", "Operator", "user_annotation"):
            by_group["ops_and_steps"] += 1
    by_group["memory"] = sum(
        1
        for e in objects
        # PyTorch 1.11-1.12 wrote them without a category.
        if e.get("ph") == "i" and e.get("cat", "") in ("cpu_instant_event", "") and e.get("name") == "[memory]"
    )
    # CPU-side step ranges (GPU-side copies in gpu_user_annotation are not steps of their own).
    steps = sum(
        1
        for e in complete
        if e.get("cat") in ("cpu_op", "Operator", "user_annotation") and str(e.get("name", "")).startswith("ProfilerStep#")
    )
    runtime_corr = {
        (e.get("args") or {}).get("correlation") for e in complete if e.get("cat") in RUNTIME
    }
    linked = sum(
        1
        for e in complete
        if e.get("cat") in GPU_WORK and (e.get("args") or {}).get("correlation") in runtime_corr - {None}
    )
    devices = doc.get("deviceProperties", []) if isinstance(doc, dict) else []
    return {
        "elements": len(events),
        "categories": dict(categories),
        "groups": dict(by_group),
        "steps": steps,
        "linked_by_correlation": linked,
        "devices": len(devices) if isinstance(devices, list) else 0,
    }


def main():
    out = {}
    for path in sys.argv[1:]:
        try:
            out[path] = count(path)
        except Exception as e:  # the oracle reports, the test decides
            out[path] = {"error": f"{type(e).__name__}: {e}"}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
