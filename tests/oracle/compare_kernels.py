#!/usr/bin/env python3
"""Independent oracle for `ttap compare`: GPU work (kernels, copies, memsets) of two traces by
normalized name, read with Python's stock json module and normalized with regular expressions and a bracket count
(not the project's parser or its normalizer), per profiler step. A record that runs past the start
of the next one on its stream (pid, tid) counts only up to it; of two starting together the
shorter counts nothing.

Usage: compare_kernels.py BEFORE AFTER   Prints one JSON object:
{"before_steps": n, "after_steps": n,
 "names": {normalized: [before_count, before_ms_per_step, after_count, after_ms_per_step]}}
"""
import gzip
import json
import re
import sys
from collections import defaultdict

GPU_WORK = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
STEP_CATS = {"cpu_op", "Operator", "user_annotation"}
# A number standing alone (not part of an identifier or a decimal).
NUMBER = re.compile(r"(?<![\w.])[0-9]+[uUlL]*(?![\w.])")


def template_numbers(name):
    """Numbers inside template arguments (`<…>` opened right after a word character, `:` or `)`)
    become `?`: the name is cut into pieces inside and outside the brackets, and the inside
    pieces rewritten with NUMBER."""
    pieces, inside, depth, piece = [], [], 0, ""
    for k, c in enumerate(name):
        prev = name[k - 1] if k else ""
        opens = c == "<" and (depth > 0 or re.match(r"[\w:)]", prev or " "))
        closes = c == ">" and depth > 0 and prev != "-"
        if opens or closes:
            pieces.append(piece)
            inside.append(depth > 0)
            piece = ""
            depth += 1 if opens else -1
            pieces.append(c)
            inside.append(False)
            continue
        piece += c
    pieces.append(piece)
    inside.append(depth > 0)
    return "".join(NUMBER.sub("?", p) if i else p for p, i in zip(pieces, inside))


def strip_signature(name):
    """Drops a trailing balanced `(…)` whose `(` follows the name directly (no space)."""
    if not name.endswith(")"):
        return name
    depth = 0
    for k in range(len(name) - 1, -1, -1):
        if name[k] == ")":
            depth += 1
        elif name[k] == "(":
            depth -= 1
            if depth == 0:
                head = name[:k]
                return name if head == "" or head.endswith(" ") else head
    return name


def normalize(name):
    name = name.strip()
    if name.startswith("void "):
        name = name[len("void "):]
    name = template_numbers(name)
    name = strip_signature(name)
    name = re.sub(r"0x[0-9a-fA-F]+", "0x?", name)
    name = re.sub(r"#[0-9]+", "#?", name)
    name = re.sub(r"stream([ =])[0-9]+", r"stream\1?", name)
    name = re.sub(r"_[0-9]+$", "", name)
    return " ".join(name.split())


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    doc = json.loads(data)
    return doc.get("traceEvents", []) if isinstance(doc, dict) else doc


def clipped(events):
    """Durations (µs) of the GPU records that overrun the next on their stream, by index."""
    streams = defaultdict(list)
    for k, e in enumerate(events):
        if e.get("cat") in GPU_WORK and float(e.get("dur", 0)) > 0:
            streams[(e.get("pid"), e.get("tid"))].append(k)
    out = {}
    for ks in streams.values():
        ks.sort(key=lambda k: (float(events[k]["ts"]), -float(events[k]["dur"])))
        prev = None
        for k in ks:
            ts = float(events[k]["ts"])
            if prev is not None:
                pts = float(events[prev]["ts"])
                if pts + out.get(prev, float(events[prev]["dur"])) > ts:
                    if ts > pts:
                        out[prev] = ts - pts
                    else:
                        out[k] = 0.0
                        continue
            prev = k
    return out


def totals(path):
    events = [e for e in load(path) if isinstance(e, dict) and e.get("ph") == "X"]
    counted = clipped(events)
    steps = sum(
        1 for e in events
        if e.get("cat") in STEP_CATS and str(e.get("name", "")).startswith("ProfilerStep#")
    )
    out = defaultdict(lambda: [0, 0.0])
    for k, e in enumerate(events):
        if e.get("cat") in GPU_WORK:
            entry = out[normalize(str(e.get("name", "")))]
            entry[0] += 1
            entry[1] += counted.get(k, float(e.get("dur", 0))) / 1e3  # µs to ms
    return max(steps, 1), out


def main():
    before_steps, before = totals(sys.argv[1])
    after_steps, after = totals(sys.argv[2])
    names = {}
    for name in set(before) | set(after):
        b = before.get(name, [0, 0.0])
        a = after.get(name, [0, 0.0])
        names[name] = [b[0], b[1] / before_steps, a[0], a[1] / after_steps]
    json.dump({"before_steps": before_steps, "after_steps": after_steps, "names": names}, sys.stdout)


if __name__ == "__main__":
    main()
