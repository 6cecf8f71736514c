#!/usr/bin/env python3
"""Independent oracle for the memory summary: each trace's `[memory]` events, read with
Python's stock json module, grouped by device, not from the project's code.

Usage: memory_peaks.py TRACE...   Prints one JSON object per trace with memory events, one a line:
{"file": path, "devices": {"TYPE:ID": {"events": n, "peak_allocated": bytes, "peak_reserved":
bytes, "op": name, "capacity": bytes}}}
The peak is the highest "Total Allocated"; its op is the innermost `cpu_op` on the same thread
whose span holds the first event reaching it (the latest-starting one, then the shortest);
capacity is `totalGlobalMem` of the `deviceProperties` entry with the device's id.
"""
import json
import sys

from flops import events_of, text_of


def properties_of(path):
    """The trace's `deviceProperties`; of a cut file, the array when it is complete."""
    text = text_of(path)
    try:
        trace = json.loads(text)
        return trace.get("deviceProperties", []) if isinstance(trace, dict) else []
    except ValueError:
        pass
    at = text.find('"deviceProperties"')
    if at < 0:
        return []
    try:
        return json.JSONDecoder().raw_decode(text, text.index("[", at))[0]
    except ValueError:
        return []


def innermost_op(ops, thread, at):
    """The innermost op of `thread` whose [ts, ts + dur] holds `at`."""
    holding = [
        (e["ts"], -e.get("dur", 0), e["name"])
        for e in ops.get(thread, [])
        if e["ts"] <= at <= e["ts"] + e.get("dur", 0)
    ]
    return max(holding)[2] if holding else None


def main():
    for path in sys.argv[1:]:
        events = events_of(path)
        memory = [
            e for e in events if e.get("name") == "[memory]" and isinstance(e.get("args"), dict)
        ]
        if not memory:
            continue
        ops = {}
        for e in events:
            if e.get("cat") in ("cpu_op", "Operator") and e.get("ph") == "X":
                ops.setdefault((e.get("pid"), e.get("tid")), []).append(e)
        capacity = {
            p.get("id"): p.get("totalGlobalMem") for p in properties_of(path) if isinstance(p, dict)
        }
        devices = {}
        for e in sorted(memory, key=lambda e: e["ts"]):
            a = e["args"]
            kind, index = a.get("Device Type", 0), a.get("Device Id", -1)
            d = devices.setdefault(
                f"{kind}:{index}",
                {
                    "events": 0,
                    "peak_allocated": None,
                    "peak_reserved": None,
                    "op": None,
                    "capacity": capacity.get(index) if kind != 0 else None,
                },
            )
            d["events"] += 1
            allocated, reserved = a.get("Total Allocated"), a.get("Total Reserved")
            if reserved is not None:
                d["peak_reserved"] = max(reserved, d["peak_reserved"] or reserved)
            if allocated is not None and (
                d["peak_allocated"] is None or allocated > d["peak_allocated"]
            ):
                d["peak_allocated"] = allocated
                d["op"] = innermost_op(ops, (e.get("pid"), e.get("tid")), e["ts"])
        print(json.dumps({"file": path, "devices": devices}))


if __name__ == "__main__":
    main()
