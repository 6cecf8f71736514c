"""Graph launches counted from the raw JSON, independently of TorchTraceAP (tests/graphs.rs).

For each trace file given, prints one JSON line: the cudaGraphLaunch / hipGraphLaunch runtime
calls, the kernels carrying their correlation ids, the kernels' summed duration (µs), and the
same per `ProfilerStep#N` range (a launch belongs to the step its call starts in). A GPU record
(kernel, copy, memset) that runs past the start of the next one on its stream (pid, tid) counts
only up to it; of two starting together the shorter counts nothing.
"""
import gzip
import json
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def clipped(events):
    """Durations of the GPU records that overrun the next on their stream, by index."""
    streams = {}
    for k, e in enumerate(events):
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and float(e["dur"]) > 0:
            streams.setdefault((e.get("pid"), e.get("tid")), []).append(k)
    out = {}
    for ks in streams.values():
        ks.sort(key=lambda k: (float(events[k]["ts"]), -float(events[k]["dur"])))
        prev = None
        for k in ks:
            ts, dur = float(events[k]["ts"]), float(events[k]["dur"])
            if prev is None:
                prev = k
                continue
            pts = float(events[prev]["ts"])
            pend = pts + out.get(prev, float(events[prev]["dur"]))
            if pend <= ts:
                prev = k
            elif ts > pts:
                out[prev] = ts - pts
                prev = k
            else:
                out[k] = 0.0
    return out


def main():
    for path in sys.argv[1:]:
        events = [e for e in load(path) if e.get("ph") == "X"]
        calls = {}
        for e in events:
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("name", "").endswith("GraphLaunch"):
                calls[e["args"]["correlation"]] = e
        counted = clipped(events)
        kernels = {c: [0, 0.0] for c in calls}
        for k, e in enumerate(events):
            c = e.get("args", {}).get("correlation")
            if e.get("cat") == "kernel" and c in kernels:
                kernels[c][0] += 1
                kernels[c][1] += counted.get(k, float(e["dur"]))
        steps = {}
        for e in events:
            name = e.get("name", "")
            if e.get("cat") in ("user_annotation", "cpu_op") and name.startswith("ProfilerStep#"):
                start, end = float(e["ts"]), float(e["ts"]) + float(e["dur"])
                inside = [c for c, call in calls.items() if start <= float(call["ts"]) < end]
                if inside:
                    steps[name[len("ProfilerStep#"):]] = {
                        "launches": len(inside),
                        "kernels": sum(kernels[c][0] for c in inside),
                        "gpu_us": sum(kernels[c][1] for c in inside),
                    }
        print(json.dumps({
            "file": path,
            "launches": len(calls),
            "kernels": sum(k[0] for k in kernels.values()),
            "gpu_us": sum(k[1] for k in kernels.values()),
            "steps": steps,
        }))


if __name__ == "__main__":
    main()
