#!/usr/bin/env python3
"""Where the first steady step's events lie in a Kineto file (issue 39: findings while reading).

For every trace under TRACES_DIR with at least 3 `ProfilerStep#` ranges and GPU kernels, prints
the share of the event array (in file order) read when the second step is complete: its host
events (ops, annotations, runtime calls, Python frames) and the GPU records its runtime calls
launched (by correlation). Kineto writes the host ops first and the runtime calls and GPU records
after them, so a prefix of the file holds whole steps late. Standard library only.

Usage: python3 scripts/event_order.py ../shared/traces
"""

import gzip
import json
import os
import re
import statistics
import sys

HOST = ("cpu_op", "user_annotation", "cuda_runtime", "python_function")
GPU = ("kernel", "gpu_memcpy", "gpu_memset")


def second_step_complete(events):
    """(share of elements read when step 2 is complete, share before the first kernel, steps)."""
    steps = sorted(
        (e for e in events if isinstance(e, dict) and e.get("ph") == "X"
         and str(e.get("name", "")).startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )
    if len(steps) < 3 or not any(isinstance(e, dict) and e.get("cat") == "kernel" for e in events):
        return None
    lo, hi = steps[1]["ts"], steps[1]["ts"] + steps[1]["dur"]
    inside = lambda e: lo <= e.get("ts", -1) < hi
    launched = {e.get("args", {}).get("correlation") for e in events
                if isinstance(e, dict) and e.get("cat") in ("cuda_runtime", "cuda_driver") and inside(e)}
    last = max(i for i, e in enumerate(events) if isinstance(e, dict) and (
        (e.get("cat") in HOST and inside(e))
        or (e.get("cat") in GPU and e.get("args", {}).get("correlation") in launched)))
    first_kernel = next(i for i, e in enumerate(events) if isinstance(e, dict) and e.get("cat") == "kernel")
    n = len(events)
    return (last + 1) / n, first_kernel / n, len(steps)


def main(root):
    rows = []
    for dirpath, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            if not re.search(r"\.json(\.gz)?$", name):
                continue
            try:
                with (gzip.open(path, "rt") if name.endswith(".gz") else open(path)) as fh:
                    doc = json.load(fh)
            except (OSError, ValueError):
                continue
            events = doc.get("traceEvents") if isinstance(doc, dict) else None
            found = second_step_complete(events) if isinstance(events, list) else None
            if found:
                rows.append(found + (os.path.relpath(path, root),))
    for done, first_kernel, steps, name in sorted(rows):
        print(f"{done:.2f} read when step 2 is complete; first kernel at {first_kernel:.2f}; {steps} steps; {name}")
    if rows:
        print(f"{len(rows)} traces; median {statistics.median(r[0] for r in rows):.2f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: event_order.py TRACES_DIR")
    main(sys.argv[1])
