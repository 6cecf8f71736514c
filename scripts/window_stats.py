#!/usr/bin/env python3
"""Raw statistics of one window of a Kineto trace, for labelling the window by hand.

    python3 scripts/window_stats.py TRACE START_MS DURATION_MS

START_MS is from the trace's first timestamp (as the report's windows and unexplained regions
give it). It reads the JSON itself and shares no code or threshold with the detectors: GPU busy
time per device (the union of kernels, copies and sets), the gaps, kernels by duration, the
runtime calls that synchronise or allocate, copies by kind, the DataLoader, and the longest CPU
operators. The labels of `models/unexplained-labels.json` were judged from its output.
"""

import gzip
import json
import statistics
import sys
from collections import Counter, defaultdict

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
SYNC_CALLS = (
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaStreamWaitEvent",
    "hipDeviceSynchronize",
    "hipStreamSynchronize",
    "hipEventSynchronize",
)
BLOCKING_COPIES = ("cudaMemcpy", "hipMemcpy")
ALLOC_CALLS = ("cudaMalloc", "cudaFree", "hipMalloc", "hipFree")


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def union(intervals):
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    path, start_ms, dur_ms = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    events = [e for e in load(path) if isinstance(e, dict) and e.get("ph") == "X" and "ts" in e]
    origin = min(float(e["ts"]) for e in events)
    lo = origin + start_ms * 1000.0
    hi = lo + dur_ms * 1000.0
    inside = [
        e for e in events if float(e["ts"]) < hi and float(e["ts"]) + float(e.get("dur", 0)) > lo
    ]
    clip = lambda e: (max(float(e["ts"]), lo), min(float(e["ts"]) + float(e.get("dur", 0)), hi))
    gpu = [e for e in inside if e.get("cat") in GPU_CATS]
    by_device = defaultdict(list)
    for e in gpu:
        by_device[e.get("pid")].append(clip(e))
    print(f"window: {start_ms:.3f}-{start_ms + dur_ms:.3f} ms ({dur_ms:.3f} ms)")
    for dev, iv in sorted(by_device.items(), key=lambda kv: str(kv[0])):
        busy = union(iv)
        print(f"GPU pid {dev}: busy {busy / 1000:.3f} ms = {100 * busy / (hi - lo):.1f}% of the window")
    kernels = [float(e.get("dur", 0)) for e in gpu if e.get("cat") in ("kernel", "Kernel")]
    if kernels:
        short = sum(1 for d in kernels if d < 10)
        print(
            f"kernels: {len(kernels)}, median {statistics.median(kernels):.1f} us, "
            f"{short} under 10 us, {sum(kernels) / 1000:.3f} ms"
        )
    copies = Counter()
    for e in gpu:
        if e.get("cat") in ("gpu_memcpy", "Memcpy"):
            copies[e["name"]] += float(e.get("dur", 0))
    for name, d in copies.most_common(5):
        print(f"copy: {name}: {d / 1000:.3f} ms")
    runtime = [e for e in inside if e.get("cat") in ("cuda_runtime", "cuda_driver", "Runtime")]
    for label, names in (("sync", SYNC_CALLS), ("blocking copy", BLOCKING_COPIES), ("alloc", ALLOC_CALLS)):
        hits = [e for e in runtime if e["name"] in names]
        if hits:
            print(
                f"{label} calls: {len(hits)} ({Counter(e['name'] for e in hits).most_common(3)}), "
                f"{sum(float(e.get('dur', 0)) for e in hits) / 1000:.3f} ms"
            )
    launches = [e for e in runtime if "Launch" in e["name"]]
    print(f"launch calls: {len(launches)}, {sum(float(e.get('dur', 0)) for e in launches) / 1000:.3f} ms")
    ops = Counter()
    for e in inside:
        if e.get("cat") in ("cpu_op", "user_annotation", "python_function", "Operator"):
            ops[e["name"]] += clip(e)[1] - clip(e)[0]
    for name, d in ops.most_common(10):
        print(f"cpu: {name[:90]}: {d / 1000:.3f} ms ({100 * d / (hi - lo):.0f}%)")


if __name__ == "__main__":
    main()
