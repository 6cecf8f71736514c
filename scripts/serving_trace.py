#!/usr/bin/env python3
"""Writes a generated vLLM serving capture, `tests/fixtures/vllm-serving.pt.trace.json`: the
engine core's loop on one H100 over 9 iterations (2 prefill, 1 mixed, 6 decode), named as vLLM
0.11 names them in the real captures of `../shared/traces` (the model runner's
`execute_<tokens>_context_<n>(sq…)_generation_<n>(sq…)` annotation around
`gpu_model_runner.py(…): execute_model`, the scheduler's frames between), with piecewise graphs
and eager attention in prefill, one full-graph replay per decode, and the sampled tokens copied
back with a sync. With `--eager`, `tests/fixtures/vllm-serving-eager.pt.trace.json`: the same
loop under `--enforce-eager`, its decode iterations launch-bound. Deterministic: run it again
and the file is the same.

    python3 scripts/serving_trace.py [--eager] [OUT]
"""

import json
import sys

PID, TID, GPU_STREAM = 100, 100, 7
LAYERS = 4
# `--eager`: vLLM's `--enforce-eager`, a launch per kernel and no graph.
EAGER = "--eager" in sys.argv
events = []
correlation = [0]


def host(cat, name, ts, dur, args=None):
    event = {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID, "ts": ts, "dur": dur}
    if args:
        event["args"] = args
    events.append(event)


def frame(path_line, function, ts, dur):
    host("python_function", f"{path_line}: {function}", ts, dur)


def gpu(cat, name, ts, dur, corr, extra=None):
    args = {"device": 0, "stream": GPU_STREAM, "correlation": corr}
    args.update(extra or {})
    events.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": GPU_STREAM,
                   "ts": ts, "dur": dur, "args": args})


def call(name, ts, dur=5):
    correlation[0] += 1
    host("cuda_runtime", name, ts, dur, {"correlation": correlation[0]})
    return correlation[0]


class Gpu:
    """The stream's clock: work queued runs after the work before it."""

    def __init__(self):
        self.free = 0

    def run(self, launched, kernels, corr, cat="kernel", extra=None):
        ts = max(self.free, launched + 4)
        for name, dur in kernels:
            gpu(cat, name, ts, dur, corr, extra)
            ts += dur + 1
        self.free = ts
        return ts


def annotation(context, context_tokens, generation):
    total = context_tokens + generation
    keys = 700 * context + 1500 * generation
    return (f"execute_{total}_context_{context}(sq{context_tokens}sk{context_tokens + 80}"
            f"sqsq{context_tokens ** 2 // max(context, 1)}sqsk{context_tokens * 90})"
            f"_generation_{generation}(sq{generation}sk{keys}sqsq{generation}sqsk{keys})")


def iteration(k, t, stream, context, context_tokens, generation):
    """Engine-core step `k` from `t` µs; returns where the next one starts."""
    prefill = context > 0
    model_us = 900 + context_tokens // 2 if prefill else 120
    frame("vllm/v1/engine/core.py(390)", "step", t, 0)  # its duration is set below
    step = events[-1]
    scheduling = 180 + 40 * (k % 3)
    frame("vllm/v1/core/sched/scheduler.py(201)", "schedule", t + 10, scheduling)
    start = t + scheduling + 20
    h = start + 20
    name = annotation(context, context_tokens, generation)
    annotation_at = len(events)
    host("user_annotation", name, start, 0)
    frame("vllm/v1/worker/gpu_model_runner.py(3380)", "execute_model", start + 5, 0)
    runner = events[-1]
    frame("vllm/v1/worker/gpu_model_runner.py(1518)", "_prepare_inputs", h, 150)
    c = call("cudaMemcpyAsync", h + 100, 8)
    stream.run(h + 100, [("Memcpy HtoD (Pinned -> Device)", 3)], c, "gpu_memcpy",
               {"bytes": 4 * (context_tokens + generation), "kind": "HtoD"})
    h += 170
    frame("vllm/v1/worker/gpu_model_runner.py(3102)", "_model_forward", h, 0)
    forward = events[-1]
    if EAGER and prefill:
        # Eager: a launch per kernel, long ones.
        for layer in range(LAYERS):
            for name, dur in [("nvjet_tst_128x256_64x4_2x1_v_bz_TNT", model_us // 3),
                              ("kernel_unified_attention_2d", model_us // 5),
                              ("nvjet_tst_256x128_64x4_1x2_h_bz_TNT", model_us // 4)]:
                c = call("cudaLaunchKernel", h, 6)
                stream.run(h, [(name, dur)], c)
                h += 25
    elif EAGER:
        # Eager decode: many kernels shorter than their launch.
        for k in range(LAYERS * 10):
            c = call("cudaLaunchKernel", h, 6)
            stream.run(h, [(f"triton_poi_fused_{k % 10}", 4)], c)
            h += 18
    elif prefill:
        # Piecewise graphs between eager attention: a replay and an attention kernel per layer.
        for layer in range(LAYERS):
            c = call("cudaGraphLaunch", h, 12)
            stream.run(h, [("nvjet_tst_128x256_64x4_2x1_v_bz_TNT", model_us // 3),
                           ("triton_poi_fused_add_rms_norm_0", 12),
                           ("nvjet_tst_256x128_64x4_1x2_h_bz_TNT", model_us // 4)], c)
            host("cpu_op", "vllm::unified_attention_with_output", h + 20, 60)
            c = call("cudaLaunchKernel", h + 40, 6)
            stream.run(h + 40, [("kernel_unified_attention_2d", model_us // 5)], c)
            h += 90
    else:
        # One full-graph replay of the whole forward pass.
        c = call("cudaGraphLaunch", h, 15)
        stream.run(h, [(f"nvjet_tst_64x8_64x16_4x1_v_bz_TNT_{k}", 55) for k in range(LAYERS * 3)]
                   + [("kernel_unified_attention_2d", 40)] * LAYERS, c)
        h += 30
    forward["dur"] = h - forward["ts"]
    frame("vllm/v1/worker/gpu_model_runner.py(3305)", "sample", h, 60)
    host("cpu_op", "aten::argmax", h + 5, 30)
    c = call("cudaLaunchKernel", h + 10, 6)
    stream.run(h + 10, [("reduce_kernel_argmax", 8)], c)
    h += 70
    c = call("cudaMemcpyAsync", h, 8)
    done = stream.run(h, [("Memcpy DtoH (Device -> Pinned)", 2)], c, "gpu_memcpy",
                      {"bytes": 8 * (context + generation), "kind": "DtoH"})
    sync_at = h + 10
    call("cudaStreamSynchronize", sync_at, max(done - sync_at, 2))
    h = max(done, sync_at + 2) + 15
    runner["dur"] = h - runner["ts"]
    events[annotation_at]["dur"] = h + 5 - start
    output = 250 + 30 * (k % 2)
    frame("vllm/v1/core/sched/scheduler.py(812)", "update_from_output", h + 30, output)
    end = h + output + 50
    step["dur"] = end - t
    return end + 20


def main():
    named = [a for a in sys.argv[1:] if not a.startswith("--")]
    default = "vllm-serving-eager" if EAGER else "vllm-serving"
    out = named[0] if named else f"tests/fixtures/{default}.pt.trace.json"
    stream = Gpu()
    t = 1_000_000
    # 8 requests arrive: two prefills of 4, then one joins while the 8 decode, then decodes.
    t = iteration(0, t, stream, 4, 2048, 0)
    t = iteration(1, t, stream, 4, 1900, 0)
    t = iteration(2, t, stream, 1, 300, 8)
    for k in range(3, 9):
        t = iteration(k, t, stream, 0, 0, 9)
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912,
                              "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
        "baseTimeNanoseconds": 1767000000000000000,
        "traceEvents": events,
        "traceName": f"{default} (generated by scripts/serving_trace.py)",
        "displayTimeUnit": "ms",
    }
    with open(out, "w") as f:
        json.dump(doc, f, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
