#!/usr/bin/env python3
"""A second, independent labeller for the real traces (issue 28, item 7).

It shares no code and no threshold with the detectors (`src/detect/`) nor with the first
labeller (`scripts/label_figures.py` + `scripts/apply_rubric.py`): it reads the raw Kineto JSON
with the Python standard library only, measures its own statistics and applies its own
thresholds. It was written before looking at what `ttap` reports on these traces.

For each trace and each anti-pattern id it says "present", "absent" or nothing (unjudged). It
only speaks where the case is CLEAR: every rule below has a "present" threshold and a separate,
much lower "absent" threshold, and everything between them (the gray zone) stays unjudged.
Each label carries the figures behind it.

Usage:
    python3 scripts/label_independent.py ../shared/traces            # JSON: trace -> labels
    python3 scripts/label_independent.py ../shared/traces/<file>     # one trace, figures shown
    python3 scripts/label_independent.py --merge models/real-labels.json ../shared/traces \\
        > /tmp/labels.json && mv /tmp/labels.json models/real-labels.json  # add to the label file

Iterations ("windows"), found in this order, with the reason:
  1. `ProfilerStep#N` ranges: the user told the profiler where a step is. The first one is
     dropped when there are 3 or more (the first step carries lazy initialisation, cuDNN
     autotuning and allocator warm-up; with 2 we keep both rather than judge from one).
  2. Otherwise the whole capture, from the first to the last event: a `with profile():`
     around a loop or a call is what the user asked about, so time before the GPU starts
     counts. Per-iteration counts then divide by the number of iterations found as
     `Optimizer.step` calls (training) or as the most repeated top-level CPU op of the busiest
     thread when it repeats at least 3 times and covers at least 30% of the capture
     (a loop of `forward` calls); else 1.
GPU-side shares are taken over the GPU's *active* part of each window (first GPU work to the
last one) so that the host's lead-in does not look like GPU idleness; host-side shares
(DataLoader) over the whole window.
"""

import bisect
import gzip
import json
import os
import re
import statistics
import sys

IDS = [
    "dataloader-bottleneck",
    "allocator-churn",
    "host-device-sync",
    "pageable-memcpy",
    "host-only-time",
    "optimizer-not-fused",
    "launch-bound-small-kernels",
    "gpu-low-utilization",
    "communication-exposed",
    "layout-transforms",
    "fp32-without-tensor-cores",
    "unfused-attention",
    "zero-grad-memset",
    "fusion-candidates",
    "heavy-memcpy",
]

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}
RUNTIME_CATS = {"cuda_runtime", "runtime", "cuda_driver", "cudaruntime"}
CPU_CATS = {"cpu_op", "operator", "user_annotation", "python_function"}

# ---------------------------------------------------------------- thresholds (all of them)
# DataLoader: the host in a DataLoader range while no GPU work runs, as a share of the window.
# 10% is a tenth of the capture spent waiting for data: nobody would call that healthy; under
# 2% nobody would spend time on it.
DL_PRESENT, DL_ABSENT, DL_MIN_MS = 0.10, 0.02, 5.0
# CPU-only: the DataLoader's share of the capture (the same process does the model work).
DL_CPU_PRESENT, DL_CPU_ABSENT = 0.15, 0.03
# Allocator: host time inside cudaMalloc/cudaFree (and hip/cu equivalents) after the GPU's
# first kernel (a cold first cudaFree is CUDA's lazy initialisation, not churn, and cuDNN's
# set-up memsets its workspace before it), as a share of the window, with calls repeating (at
# least 10 calls after the first kernel).
ALLOC_PRESENT, ALLOC_ABSENT, ALLOC_MIN_CALLS = 0.05, 0.005, 10
# Syncs: GPU idle while the host is blocked in a synchronising call and from its end to the
# next GPU work (that part capped at 20 ms: beyond it the host is doing something else), not
# inside DataLoader ranges, as a share of the GPU-active time.
SYNC_PRESENT, SYNC_ABSENT, SYNC_CAP_US = 0.05, 0.005, 20_000.0
# Pageable copies per iteration: a batch (>= 256 KB) copied from pageable memory every
# iteration is the pin_memory=False pattern; under 16 KB (scalars, shapes) it is not.
PAGEABLE_PRESENT_BYTES, PAGEABLE_ABSENT_BYTES = 256 * 1024, 16 * 1024
PAGEABLE_PRESENT_FRAC, PAGEABLE_ABSENT_FRAC = 0.01, 0.001
# Host-only time (ProfilerStep traces only): GPU idle at the start and end of a step, outside
# DataLoader / sync / allocator time, median over steps.
HOST_PRESENT, HOST_ABSENT = 0.30, 0.05
# Optimizer: top-level aten ops or kernels per Optimizer.step call without any
# _foreach_/_fused_ op: hundreds is the single-tensor loop; a few dozen is a small model.
OPT_PRESENT, OPT_ABSENT = 100, 30
# zero_grad: zero/fill ops or kernels per zero_grad call (median).
ZERO_PRESENT = 2
# Launch-bound: GPU idle in short gaps (< 1 ms) between GPU work, not explained by a cause,
# as a share of GPU-active time, with short kernels (median < 20 us). Absent only when the
# GPU is not starved at all (all unexplained idle < 10%) or its kernels are long: a starved
# GPU with short kernels and long gaps sits between launch-bound and low utilisation.
LAUNCH_PRESENT, LAUNCH_ABSENT = 0.30, 0.10
LAUNCH_SHORT_KERNEL_US, LAUNCH_LONG_KERNEL_US = 20.0, 50.0
GAP_LONG_US = 1000.0
# Low utilisation: busy under half of GPU-active time with long unexplained gaps.
LOWUTIL_BUSY_PRESENT, LOWUTIL_LONGIDLE_PRESENT = 0.50, 0.30
LOWUTIL_BUSY_ABSENT, LOWUTIL_IDLE_ABSENT = 0.80, 0.10
# Collectives not overlapped by compute, share of GPU-active time.
COMM_PRESENT, COMM_ABSENT = 0.10, 0.02
# Layout conversions (NCHW <-> NHWC), share of GPU busy time.
LAYOUT_PRESENT, LAYOUT_ABSENT = 0.03, 0.005
# fp32 SIMT GEMM/conv, share of GEMM/conv kernel time; GEMM/conv must matter (>= 10% of busy).
FP32_PRESENT, FP32_ABSENT, FP32_GEMM_MIN, FP32_GEMM_NEGLIGIBLE = 0.30, 0.05, 0.10, 0.02
# Element-wise chains (>= 5 consecutive short element-wise kernels on a stream), share of busy.
FUSION_PRESENT, FUSION_ABSENT, FUSION_RUN, FUSION_KERNEL_US = 0.15, 0.03, 5, 50.0
# All copies (union), share of GPU-active time.
MEMCPY_PRESENT, MEMCPY_ABSENT = 0.20, 0.03
# Attention: at most this many ops (CPU) or kernels between the score GEMM and the softmax,
# and between the softmax and the value GEMM (one block: scale, bias, mask, dropout, casts).
ATTN_GAP_OPS, ATTN_GAP_KERNELS = 25, 15
# Too little to judge: fewer GPU events and CPU ops than this is a unit-test fixture.
MIN_GPU_EVENTS, MIN_CPU_OPS = 3, 20

# ---------------------------------------------------------------- names
SYNC_RE = re.compile(
    r"^(cuda|hip|cu)(Device|Stream|Event|Ctx)Synchronize|^(cuda|hip)Memcpy(2D|3D)?$|"
    r"^hipMemcpyWithStream$"
)
# `.item()` synchronises only on a GPU tensor, where it issues a copy and a sync (runtime calls
# inside the op); on a CPU tensor it reads memory and returns in a microsecond.
SYNC_OP_RE = re.compile(r"^aten::(item|_local_scalar_dense)$")
ALLOC_RE = re.compile(r"^(cuda|hip)(Malloc|Free)|^cuMem(Alloc|Free)|HostAlloc|MallocHost|FreeHost")
DL_RE = re.compile(r"dataloader|_next_data", re.I)
COLL_RE = re.compile(
    r"nccl|rccl|allreduce|all_reduce|allgather|all_gather|reducescatter|reduce_scatter|"
    r"alltoall|all_to_all|sendrecv",
    re.I,
)
LAYOUT_RE = re.compile(r"nchw.?to.?nhwc|nhwc.?to.?nchw|nchw2nhwc|nhwc2nchw", re.I)
# Generic transposes (MIOpen names its layout conversions `batched_transpose…`): in a trace
# with convolutions they may be layout conversions, so they keep "absent" from being clear.
TRANSPOSE_RE = re.compile(r"transpose|permute", re.I)
GEMM_KERNEL_RE = re.compile(
    r"gemm|xmma|cutlass|Cijk_|bmm|matmul|gemv|_mm_|s\d{3,5}gemm|h\d{3,5}gemm|"
    r"(ampere|volta|turing|hopper|sm\d\d)_.*(nn|nt|tn|tt)\b",
    re.I,
)
CONV_KERNEL_RE = re.compile(r"conv|scudnn|winograd|implicit_gemm|igemm|miopenSp|fprop|dgrad|wgrad", re.I)
TC_KERNEL_RE = re.compile(
    r"xmma|hmma|wgmma|tensorop|mma|s1688|s16816|s884|h1688|h16816|h884|tf32|bf16|f16|fp16|half|"
    r"float16|_MI\d+x\d+|_HB_|_BB_|_HH_|_HS_|_BS_",
    re.I,
)
# SIMT fp32 by name only: cuBLAS/cuDNN single-precision kernels (sgemm, scudnn, gemmSN),
# CUTLASS SIMT, ROCm Tensile single precision (`Cijk_…_S_`/`_SB_`) without MFMA (`_MI…`).
SIMT_FP32_RE = re.compile(r"sgemm|scudnn|gemmSN|_simt_|^Cijk_.*_SB?_")
# cuBLAS/cuDNN `xmma` kernels that run fp32 on the SIMT cores say so: `…_ffma_…` (fused
# multiply-add), whatever tensor-core word (`xmma`) the rest of the name carries.
FFMA_RE = re.compile(r"_ffma")
SOFTMAX_KERNEL_RE = re.compile(r"softmax", re.I)
BACKWARD_RE = re.compile(r"backward|bwd|_grad", re.I)
FUSED_ATTN_RE = re.compile(
    r"flash|fmha|efficient_attention|mem_efficient|_native_multi_head_attention|"
    r"scaled_dot_product_(flash|efficient|cudnn)|fused_attn|paged_attention|unified_attention|"
    r"attention_kernel|sdpa",
    re.I,
)
ATTN_GEMM_OPS = {"aten::matmul", "aten::bmm", "aten::baddbmm", "aten::einsum"}
SOFTMAX_OPS = {"aten::softmax", "aten::_softmax", "aten::_safe_softmax"}
LINEAR_OPS = {"aten::linear", "aten::addmm", "aten::mm"}
# Eager PyTorch's element-wise kernels. Not Triton's `triton_poi_…`: those are what torch.compile
# already fused (each is a chain of ops in one kernel), and what the compiler left as separate
# kernels it does not join, so runs of them are not a chain waiting to be fused (first version
# counted them: a rule change, see docs/LABELS.md).
ELEMENTWISE_RE = re.compile(r"elementwise", re.I)
TRAINING_RE = re.compile(r"backward|autograd::engine|Optimizer\.", re.I)
ZERO_OP_RE = re.compile(r"^aten::(zero_|fill_)$")
ZERO_GPU_RE = re.compile(r"fill|zero|memset", re.I)
TENSOR_CORE_GPU_RE = re.compile(
    r"V100|T4|A10|A30|A40|A100|A800|H100|H800|H200|B100|B200|L4|L40|RTX|Titan V|MI1\d\d|MI2\d\d|"
    r"MI3\d\d|Instinct",
    re.I,
)


# ---------------------------------------------------------------- intervals
def union(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return out


def total(u):
    return sum(e - s for s, e in u)


def clip(u, lo, hi):
    return [[max(s, lo), min(e, hi)] for s, e in u if e > lo and s < hi]


def intersect(a, b):
    """Intersection of two unions (sorted, disjoint)."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append([s, e])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def complement(u, lo, hi):
    out, cur = [], lo
    for s, e in clip(u, lo, hi):
        if s > cur:
            out.append([cur, s])
        cur = max(cur, e)
    if cur < hi:
        out.append([cur, hi])
    return out


# ---------------------------------------------------------------- reading
def load(path):
    """The trace's X events, or a reason why it is not a Kineto trace."""
    with open(path, "rb") as f:
        raw = f.read()
    if not raw.strip():
        return None, "empty file"
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            return None, f"broken gzip: {e}"
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        return None, f"not JSON ({str(e)[:60]})"
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return None, "not a Kineto trace (no traceEvents object)"
    events = []
    for e in doc["traceEvents"]:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        try:
            ts, dur = float(e["ts"]), float(e.get("dur", 0) or 0)
        except (KeyError, TypeError, ValueError):
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        events.append(
            {
                "name": str(e.get("name", "")),
                "cat": str(e.get("cat", "")).lower(),
                "ts": ts,
                "end": ts + max(dur, 0.0),
                "pid": e.get("pid"),
                "tid": e.get("tid"),
                "args": args,
            }
        )
    if not events:
        return None, "no complete (ph X) events"
    cats = {e["cat"] for e in events}
    if cats & {"operatorinner", "userdefined"}:
        return None, "PaddlePaddle profiler categories (OperatorInner, UserDefined): not a PyTorch capture"
    gpu_work = sum(1 for e in events if e["cat"] in GPU_CATS)
    if gpu_work == 0 and not any(e["name"].startswith("aten::") for e in events):
        return None, "no aten:: operator and no GPU work: nothing PyTorch ran"
    if gpu_work < MIN_GPU_EVENTS and sum(1 for e in events if e["cat"] in CPU_CATS) < MIN_CPU_OPS:
        return None, f"{gpu_work} GPU events and a handful of CPU ops: a test fixture, not a workload"
    return (doc, events), None


def nest(cpu):
    """Parent index per CPU event, per thread, by time containment."""
    by_tid = {}
    for i, e in enumerate(cpu):
        by_tid.setdefault((e["pid"], e["tid"]), []).append(i)
    parent = [None] * len(cpu)
    for idx in by_tid.values():
        idx.sort(key=lambda i: (cpu[i]["ts"], -cpu[i]["end"]))
        stack = []
        for i in idx:
            while stack and cpu[stack[-1]]["end"] <= cpu[i]["ts"]:
                stack.pop()
            parent[i] = stack[-1] if stack else None
            stack.append(i)
    return parent, by_tid


def ancestors(parent, i):
    p = parent[i]
    while p is not None:
        yield p
        p = parent[p]


# ---------------------------------------------------------------- measuring
def measure(doc, events):
    cpu = [e for e in events if e["cat"] in CPU_CATS]
    gpu_all = [e for e in events if e["cat"] in GPU_CATS]
    runtime = [e for e in events if e["cat"] in RUNTIME_CATS]
    f = {}
    dev_busy = {}
    for e in gpu_all:
        dev = e["args"].get("device", e["pid"])
        dev_busy.setdefault(dev, []).append((e["ts"], e["end"]))
    main_dev = max(dev_busy, key=lambda d: total(union(dev_busy[d]))) if dev_busy else None
    gpu = [e for e in gpu_all if e["args"].get("device", e["pid"]) == main_dev]
    kernels = [e for e in gpu if e["cat"] == "kernel"]
    copies = [e for e in gpu if "memcpy" in e["cat"]]
    busy_all = union([(e["ts"], e["end"]) for e in gpu_all])
    busy = union([(e["ts"], e["end"]) for e in gpu])
    f["cpu_only"] = not gpu_all
    # Signs that a GPU ran although no GPU activity was recorded (activities=[CPU] on a GPU
    # job, see gpu_evidence): GPU-side ids cannot be judged then.
    f["gpu_used_but_not_recorded"] = not gpu_all and gpu_evidence(doc, events, runtime)
    f["training"] = any(TRAINING_RE.search(e["name"]) for e in cpu)
    names = [e["name"] for e in events]

    # windows
    steps = sorted(
        (e for e in cpu if re.match(r"^ProfilerStep#\d+$", e["name"])), key=lambda e: e["ts"]
    )
    outer = []
    for s in steps:
        if outer and s["ts"] < outer[-1]["end"]:
            continue
        outer.append(s)
    if outer:
        if len(outer) >= 3:
            outer = outer[1:]
        windows = [(s["ts"], s["end"]) for s in outer]
        f["windows_from"] = f"ProfilerStep ({len(windows)} steps used)"
    else:
        windows = [(min(e["ts"] for e in events), max(e["end"] for e in events))]
        f["windows_from"] = "whole capture"
    wins_u = union(windows)
    win_time = total(wins_u)
    f["window_ms"] = round(win_time / 1000, 3)

    parent, by_tid = nest(cpu)
    opt_calls = [i for i, e in enumerate(cpu) if e["name"].startswith("Optimizer.step")]
    opt_calls = [i for i in opt_calls if not any(cpu[a]["name"].startswith("Optimizer.step") for a in ancestors(parent, i))]
    if outer:
        iterations = len(windows)
        f["iterations_from"] = "ProfilerStep"
    elif len(opt_calls) >= 2:
        iterations = len(opt_calls)
        f["iterations_from"] = "Optimizer.step calls"
    else:
        iterations, f["iterations_from"] = 1, "one (no repeating structure)"
        if by_tid:
            busiest = max(by_tid.values(), key=lambda idx: sum(cpu[i]["end"] - cpu[i]["ts"] for i in idx if parent[i] is None))
            tops = [cpu[i] for i in busiest if parent[i] is None]
            counts = {}
            for t in tops:
                c = counts.setdefault(t["name"], [0, 0.0])
                c[0] += 1
                c[1] += t["end"] - t["ts"]
            best = max(counts.items(), key=lambda kv: kv[1][1]) if counts else None
            if best and best[1][0] >= 3 and best[1][1] >= 0.3 * win_time:
                iterations = best[1][0]
                f["iterations_from"] = f"repeated top-level op {best[0]!r}"
    f["iterations"] = iterations

    # active GPU part of each window
    active = []
    for lo, hi in windows:
        b = clip(busy, lo, hi)
        if b:
            active.append((b[0][0], b[-1][1]))
    active_u = union(active)
    active_time = total(active_u)
    busy_in = intersect(busy, active_u)
    busy_time = total(busy_in)
    f["gpu_active_ms"] = round(active_time / 1000, 3)
    f["gpu_busy_frac_of_active"] = round(busy_time / active_time, 4) if active_time else None

    # DataLoader
    dl = union([(e["ts"], e["end"]) for e in cpu if DL_RE.search(e["name"])])
    dl_in = clip(dl, *(wins_u[0][0], wins_u[-1][1])) if wins_u else []
    dl_in = intersect(dl_in, wins_u)
    if f["cpu_only"]:
        f["dataloader_frac_of_window"] = round(total(dl_in) / win_time, 4) if win_time else 0.0
    else:
        dl_idle = [seg for seg in dl_in for seg in complement(busy_all, seg[0], seg[1])]
        f["dataloader_gpu_idle_frac_of_window"] = round(total(dl_idle) / win_time, 4) if win_time else 0.0
        f["dataloader_gpu_idle_ms"] = round(total(dl_idle) / 1000, 3)
    f["dataloader_ranges"] = sum(1 for e in cpu if DL_RE.search(e["name"]))

    # Syncs
    runtime_by_thread = {}
    for r in runtime:
        runtime_by_thread.setdefault(r["tid"], []).append(r["ts"])
    for v in runtime_by_thread.values():
        v.sort()

    def issues_runtime_call(e):
        v = runtime_by_thread.get(e["tid"], [])
        k = bisect.bisect_left(v, e["ts"])
        return k < len(v) and v[k] < e["end"]

    sync_calls = [e for e in runtime if SYNC_RE.search(e["name"])] + [
        e for e in cpu if SYNC_OP_RE.match(e["name"]) and issues_runtime_call(e)
    ]
    starts = sorted(e["ts"] for e in gpu)

    sync_idle = []
    mid_syncs = 0
    for e in sync_calls:
        if not any(lo <= e["end"] <= hi for lo, hi in active):
            continue
        k = bisect.bisect_left(starts, e["end"])
        if k >= len(starts):
            continue
        # GPU idle while the host is blocked in the call, and after it until new work arrives
        idle_segs = complement(busy, e["ts"], min(starts[k], e["end"] + SYNC_CAP_US))
        if not idle_segs:
            continue
        mid_syncs += 1
        sync_idle.extend(idle_segs)
    sync_idle = union(sync_idle)
    sync_idle_net = [seg for s in sync_idle for seg in complement(dl, s[0], s[1])]
    f["sync_calls"] = len(sync_calls)
    f["sync_calls_followed_by_gpu_idle"] = mid_syncs
    f["sync_idle_frac_of_active"] = round(total(sync_idle_net) / active_time, 4) if active_time else 0.0

    # Allocator
    first_kernel = min((k["ts"] for k in kernels), default=None)
    allocs = [e for e in runtime if ALLOC_RE.search(e["name"]) and first_kernel is not None and e["ts"] >= first_kernel]
    alloc_u = intersect(union([(e["ts"], e["end"]) for e in allocs]), wins_u)
    f["alloc_calls_after_first_kernel"] = len(allocs)
    f["alloc_time_frac_of_window"] = round(total(alloc_u) / win_time, 4) if win_time else 0.0

    # Copies
    pageable = [c for c in copies if "pageable" in c["name"].lower() or "pageable" in json.dumps(c["args"]).lower()]
    pbytes = sum(float(c["args"].get("bytes", 0) or 0) for c in pageable)
    f["pageable_copies"] = len(pageable)
    f["pageable_bytes_per_iteration"] = round(pbytes / iterations)
    f["pageable_frac_of_active"] = round(total(union([(c["ts"], c["end"]) for c in pageable])) / active_time, 5) if active_time else 0.0
    f["memcpy_frac_of_active"] = round(total(intersect(union([(c["ts"], c["end"]) for c in copies]), active_u)) / active_time, 4) if active_time else 0.0

    # optimizer and zero_grad
    foreach = lambda n: "_foreach_" in n or "_fused_" in n or "multi_tensor_apply" in n or "fused_adam" in n.lower()
    corr_kernels = {}
    for k in gpu:
        c = k["args"].get("correlation")
        if c is not None:
            corr_kernels.setdefault(c, []).append(k)

    def inside(i):
        r = cpu[i]
        ops = [j for j in by_tid[(r["pid"], r["tid"])] if r["ts"] <= cpu[j]["ts"] and cpu[j]["end"] <= r["end"] and j != i]
        rts = [e for e in runtime if e["tid"] == r["tid"] and r["ts"] <= e["ts"] and e["end"] <= r["end"]]
        launched = [k for e in rts for k in corr_kernels.get(e["args"].get("correlation"), [])]
        return ops, launched

    # Ops whose recorded inputs are all 0-dim (`state["step"] += 1`, `.item()`) are bookkeeping
    # every optimizer does per parameter, fused ones included (apex's and TorchRec's FusedAdam):
    # the single-tensor loop is ops over the parameters themselves (first version counted them:
    # a rule change, see docs/LABELS.md).
    def scalars_only(e):
        dims = e.get("args", {}).get("Input Dims")
        return isinstance(dims, list) and len(dims) > 0 and all(d == [] for d in dims)

    # An Optimizer.step call that is the single-tensor loop (no _foreach_/_fused_ work, at least
    # OPT_PRESENT ops or kernels) is a cause of its own: the GPU idle
    # while the host is in it is explained, and its element-wise kernels are not a chain
    # waiting for a compiler (the fused optimizer is their fix).
    per_call, unfused_opt, unfused_opt_kernels = [], [], set()
    for i in opt_calls:
        ops, launched = inside(i)
        tops = [j for j in ops if cpu[j]["name"].startswith("aten::") and not any(cpu[a]["name"].startswith("aten::") for a in ancestors(parent, j)) and not scalars_only(cpu[j])]
        fused = any(foreach(cpu[j]["name"]) for j in ops) or any(foreach(k["name"]) for k in launched)
        per_call.append((len(tops), len(launched), fused))
        if not fused and max(len(tops), len(launched)) >= OPT_PRESENT:
            unfused_opt.append((cpu[i]["ts"], cpu[i]["end"]))
            unfused_opt_kernels.update(id(k) for k in launched)
    f["optimizer_calls"] = len(per_call)
    if per_call:
        f["optimizer_top_aten_ops_per_call"] = statistics.median(p[0] for p in per_call)
        f["optimizer_kernels_per_call"] = statistics.median(p[1] for p in per_call)
        f["optimizer_calls_with_foreach_or_fused"] = sum(p[2] for p in per_call)
    zg = [i for i, e in enumerate(cpu) if "zero_grad" in e["name"]]
    zg = [i for i in zg if not any("zero_grad" in cpu[a]["name"] for a in ancestors(parent, i))]
    zcounts = []
    for i in zg:
        ops, launched = inside(i)
        z = sum(1 for j in ops if ZERO_OP_RE.match(cpu[j]["name"])) + sum(1 for k in launched if ZERO_GPU_RE.search(k["name"]) or "memset" in k["cat"])
        zcounts.append(z)
    f["zero_grad_calls"] = len(zcounts)
    if zcounts:
        f["zero_grad_zero_ops_per_call"] = statistics.median(zcounts)
        f["zero_grad_calls_writing_zeros"] = sum(1 for z in zcounts if z >= ZERO_PRESENT)

    # gaps: launch-bound and low utilisation
    explained = union(dl + sync_idle + [list(x) for x in alloc_u] + [list(x) for x in unfused_opt])
    idle = [seg for lo, hi in active_u for seg in complement(busy, lo, hi)]
    short_gap, long_gap = 0.0, 0.0
    for s, e in idle:
        net = total(complement(explained, s, e))
        if e - s >= GAP_LONG_US:
            long_gap += net
        else:
            short_gap += net
    f["short_gap_idle_frac_of_active"] = round(short_gap / active_time, 4) if active_time else 0.0
    f["long_gap_idle_frac_of_active"] = round(long_gap / active_time, 4) if active_time else 0.0
    kd = [e["end"] - e["ts"] for e in kernels if any(lo <= e["ts"] < hi for lo, hi in active_u)]
    f["kernels"] = len(kd)
    f["median_kernel_us"] = round(statistics.median(kd), 2) if kd else None

    # host-only time at step edges
    if outer:
        edge = []
        for lo, hi in windows:
            b = clip(busy, lo, hi)
            if not b:
                continue
            segs = [[lo, b[0][0]], [b[-1][1], hi]]
            net = sum(total(complement(explained, s, e)) for s, e in segs if e > s)
            edge.append(net / (hi - lo))
        f["step_edge_idle_frac_median"] = round(statistics.median(edge), 4) if edge else None
    # collectives
    coll = [k for k in kernels if COLL_RE.search(k["name"])]
    compute = union([(k["ts"], k["end"]) for k in kernels if not COLL_RE.search(k["name"])])
    coll_u = intersect(union([(k["ts"], k["end"]) for k in coll]), active_u)
    exposed = [seg for s, e in coll_u for seg in complement(compute, s, e)]
    f["collective_frac_of_active"] = round(total(coll_u) / active_time, 4) if active_time else 0.0
    f["collective_exposed_frac_of_active"] = round(total(exposed) / active_time, 4) if active_time else 0.0

    # layout
    ktime = sum(k["end"] - k["ts"] for k in kernels)
    lay = sum(k["end"] - k["ts"] for k in kernels if LAYOUT_RE.search(k["name"]))
    f["layout_frac_of_kernel_time"] = round(lay / ktime, 4) if ktime else 0.0
    has_conv = any(CONV_KERNEL_RE.search(k["name"]) for k in kernels)
    tr = sum(k["end"] - k["ts"] for k in kernels if has_conv and TRANSPOSE_RE.search(k["name"]) and not LAYOUT_RE.search(k["name"]))
    f["other_transpose_frac_of_kernel_time_with_conv"] = round(tr / ktime, 4) if ktime else 0.0

    # fp32 SIMT
    gemmconv = [k for k in kernels if (GEMM_KERNEL_RE.search(k["name"]) or CONV_KERNEL_RE.search(k["name"])) and not COLL_RE.search(k["name"])]
    gc_time = sum(k["end"] - k["ts"] for k in gemmconv)
    simt = sum(k["end"] - k["ts"] for k in gemmconv if FFMA_RE.search(k["name"]) or (SIMT_FP32_RE.search(k["name"]) and not TC_KERNEL_RE.search(k["name"])))
    f["gemm_conv_frac_of_kernel_time"] = round(gc_time / ktime, 4) if ktime else 0.0
    f["simt_fp32_frac_of_gemm_conv"] = round(simt / gc_time, 4) if gc_time else 0.0
    props = doc.get("deviceProperties") if isinstance(doc.get("deviceProperties"), list) else []
    majors = [p.get("computeMajor") for p in props if isinstance(p, dict) and isinstance(p.get("computeMajor"), int)]
    gnames = [str(p.get("name", "")) for p in props if isinstance(p, dict)]
    if majors and any("NVIDIA" in n or "Tesla" in n or "GeForce" in n or "Quadro" in n or n == "" for n in gnames) and not any(TENSOR_CORE_GPU_RE.search(n) for n in gnames if "AMD" in n or "MI" in n):
        f["tensor_cores"] = max(majors) >= 7
    elif any(TENSOR_CORE_GPU_RE.search(n) for n in gnames):
        f["tensor_cores"] = True
    else:
        f["tensor_cores"] = None
    f["gpu_names"] = sorted(set(gnames))

    # element-wise chains
    by_stream = {}
    for k in kernels:
        by_stream.setdefault(k["args"].get("stream", k["tid"]), []).append(k)
    chain_time = 0.0
    for ks in by_stream.values():
        ks.sort(key=lambda k: k["ts"])
        run = []
        for k in ks + [None]:
            if k is not None and ELEMENTWISE_RE.search(k["name"]) and k["end"] - k["ts"] < FUSION_KERNEL_US and id(k) not in unfused_opt_kernels:
                run.append(k)
                continue
            if len(run) >= FUSION_RUN:
                chain_time += sum(r["end"] - r["ts"] for r in run)
            run = []
    f["elementwise_chain_frac_of_kernel_time"] = round(chain_time / ktime, 4) if ktime else 0.0

    # attention
    f["fused_attention"] = sorted({n for n in names if FUSED_ATTN_RE.search(n)})[:3]
    cpu_ops = [e for e in cpu if e["cat"] in ("cpu_op", "operator")]
    attn_cpu = 0
    if cpu_ops:
        for idx in by_tid.values():
            seq = []
            for i in idx:
                e = cpu[i]
                if e["cat"] not in ("cpu_op", "operator"):
                    continue
                anc = [cpu[a]["name"] for a in ancestors(parent, i)]
                if any(BACKWARD_RE.search(a) for a in anc) or BACKWARD_RE.search(e["name"]):
                    continue
                if e["name"] in ATTN_GEMM_OPS and not any(a in ATTN_GEMM_OPS or a in LINEAR_OPS for a in anc):
                    seq.append("G")
                elif e["name"] in SOFTMAX_OPS and not any(a in SOFTMAX_OPS for a in anc):
                    seq.append("S")
                elif e["name"].startswith("aten::") and not any(a.startswith("aten::") for a in anc):
                    seq.append(".")
            attn_cpu += count_attention(seq, ATTN_GAP_OPS)
    f["attention_cpu_blocks"] = attn_cpu
    attn_k = 0
    if not cpu_ops:
        for ks in by_stream.values():
            seq = []
            for k in ks:
                n = k["name"]
                if BACKWARD_RE.search(n):
                    seq.append(".")
                elif SOFTMAX_KERNEL_RE.search(n):
                    seq.append("S")
                elif GEMM_KERNEL_RE.search(n) and not CONV_KERNEL_RE.search(n):
                    seq.append("G")
                else:
                    seq.append(".")
            attn_k += count_attention(seq, ATTN_GAP_KERNELS)
    f["attention_kernel_blocks"] = attn_k

    return f


def gpu_evidence(doc, events, runtime):
    """Signs that the GPU (or another accelerator) was used: runtime calls, cuDNN/CUDA ops,
    CUDA device arguments, [memory] events on a CUDA device, an accelerator's own categories
    (MTIA), or device copies (`aten::to`, `aten::_to_copy`) on a host with a GPU
    (deviceProperties or a GPU process label; alone those appear on CPU runs too)."""
    if runtime or any("runtime" in e["cat"] or "mtia" in e["cat"] for e in events):
        return True
    ops = [e for e in events if e["cat"] in ("cpu_op", "operator")]
    if any(re.search(r"cudnn|cuda|miopen", e["name"], re.I) or "'cuda" in str(e["args"]) for e in ops):
        return True
    gpu_host = bool(doc.get("deviceProperties"))
    for e in doc["traceEvents"]:
        args = e.get("args") if isinstance(e, dict) and isinstance(e.get("args"), dict) else {}
        if e.get("name") == "[memory]" and args.get("Device Type") == 1:
            return True
        if e.get("ph") == "M" and "GPU" in str(args.get("labels", "")):
            gpu_host = True
    return gpu_host and any(e["name"] in ("aten::to", "aten::_to_copy") for e in ops)


def count_attention(seq, gap):
    """G … S … G with no other G between and at most `gap` other entries on each side."""
    n, i, found = len(seq), 0, 0
    while i < n:
        if seq[i] != "S":
            i += 1
            continue
        before = next((j for j in range(i - 1, max(-1, i - gap - 2), -1) if seq[j] in "GS"), None)
        after = next((j for j in range(i + 1, min(n, i + gap + 2)) if seq[j] in "GS"), None)
        if before is not None and after is not None and seq[before] == "G" and seq[after] == "G":
            found += 1
        i += 1
    return found


# ---------------------------------------------------------------- judging
def judge(f):
    """id -> (label, reason); ids left out are unjudged."""
    out = {}

    def put(i, label, reason):
        out[i] = (label, reason)

    def band(i, x, present, absent, what):
        if x is None:
            return
        if x >= present:
            put(i, "present", f"{what} = {x:.2%} (>= {present:.1%})")
        elif x < absent:
            put(i, "absent", f"{what} = {x:.2%} (< {absent:.1%})")

    cpu_only = f["cpu_only"]
    if cpu_only and not f["gpu_used_but_not_recorded"]:
        for i in (
            "host-device-sync", "pageable-memcpy", "launch-bound-small-kernels", "gpu-low-utilization",
            "communication-exposed", "layout-transforms", "fp32-without-tensor-cores", "heavy-memcpy",
        ):
            put(i, "absent", "CPU-only capture: no GPU work at all")
    if cpu_only:
        x = f["dataloader_frac_of_window"]
        if f["dataloader_ranges"] == 0:
            put("dataloader-bottleneck", "absent", "no DataLoader range in the capture")
        else:
            band("dataloader-bottleneck", x, DL_CPU_PRESENT, DL_CPU_ABSENT, "host time in DataLoader ranges, share of the window")
    else:
        x = f["dataloader_gpu_idle_frac_of_window"]
        if f["dataloader_ranges"] == 0:
            put("dataloader-bottleneck", "absent", "no DataLoader range in the capture")
        elif x >= DL_PRESENT and f["dataloader_gpu_idle_ms"] >= DL_MIN_MS:
            put("dataloader-bottleneck", "present", f"host in DataLoader while no GPU work runs = {x:.2%} of the window ({f['dataloader_gpu_idle_ms']} ms)")
        elif x < DL_ABSENT:
            put("dataloader-bottleneck", "absent", f"host in DataLoader while no GPU work runs = {x:.2%} of the window (< {DL_ABSENT:.0%})")
        a = f["alloc_time_frac_of_window"]
        if a >= ALLOC_PRESENT and f["alloc_calls_after_first_kernel"] >= ALLOC_MIN_CALLS:
            put("allocator-churn", "present", f"host in malloc/free calls = {a:.2%} of the window, {f['alloc_calls_after_first_kernel']} calls after the first kernel")
        elif a < ALLOC_ABSENT:
            put("allocator-churn", "absent", f"host in malloc/free calls after the first kernel = {a:.2%} of the window")
        s = f["sync_idle_frac_of_active"]
        if s >= SYNC_PRESENT and f["sync_calls_followed_by_gpu_idle"] >= f["iterations"]:
            put("host-device-sync", "present", f"GPU idle after {f['sync_calls_followed_by_gpu_idle']} synchronising calls = {s:.2%} of GPU-active time")
        elif s < SYNC_ABSENT:
            put("host-device-sync", "absent", f"GPU idle after synchronising calls = {s:.2%} of GPU-active time ({f['sync_calls']} calls)")
        pb, pf = f["pageable_bytes_per_iteration"], f["pageable_frac_of_active"]
        if f["pageable_copies"] >= f["iterations"] and (pb >= PAGEABLE_PRESENT_BYTES or pf >= PAGEABLE_PRESENT_FRAC):
            put("pageable-memcpy", "present", f"{f['pageable_copies']} pageable copies, {pb} bytes per iteration, {pf:.2%} of GPU-active time")
        elif pb < PAGEABLE_ABSENT_BYTES and pf < PAGEABLE_ABSENT_FRAC:
            put("pageable-memcpy", "absent", f"{f['pageable_copies']} pageable copies, {pb} bytes per iteration, {pf:.3%} of GPU-active time")
        band("heavy-memcpy", f["memcpy_frac_of_active"], MEMCPY_PRESENT, MEMCPY_ABSENT, "copies (union), share of GPU-active time")
        short, long_, busy = f["short_gap_idle_frac_of_active"], f["long_gap_idle_frac_of_active"], f["gpu_busy_frac_of_active"]
        mk = f["median_kernel_us"]
        if mk is not None and short >= LAUNCH_PRESENT and mk < LAUNCH_SHORT_KERNEL_US:
            put("launch-bound-small-kernels", "present", f"unexplained GPU idle in gaps < 1 ms = {short:.2%} of GPU-active time, median kernel {mk} us")
        elif short + long_ < LAUNCH_ABSENT or (mk is not None and mk >= LAUNCH_LONG_KERNEL_US and short < LAUNCH_PRESENT):
            put("launch-bound-small-kernels", "absent", f"unexplained GPU idle in gaps < 1 ms = {short:.2%} of GPU-active time, median kernel {mk} us")
        if busy is not None:
            if busy < LOWUTIL_BUSY_PRESENT and long_ >= LOWUTIL_LONGIDLE_PRESENT:
                put("gpu-low-utilization", "present", f"GPU busy {busy:.2%} of its active time; unexplained idle in gaps >= 1 ms = {long_:.2%}")
            elif busy >= LOWUTIL_BUSY_ABSENT or short + long_ < LOWUTIL_IDLE_ABSENT:
                put("gpu-low-utilization", "absent", f"GPU busy {busy:.2%} of its active time; unexplained idle = {short + long_:.2%}")
        cx, cf = f["collective_exposed_frac_of_active"], f["collective_frac_of_active"]
        if cx >= COMM_PRESENT:
            put("communication-exposed", "present", f"collectives not overlapped by compute = {cx:.2%} of GPU-active time")
        elif cx < COMM_ABSENT or cf < COMM_ABSENT:
            put("communication-exposed", "absent", f"collectives = {cf:.2%}, not overlapped = {cx:.2%} of GPU-active time")
        lt, tr = f["layout_frac_of_kernel_time"], f["other_transpose_frac_of_kernel_time_with_conv"]
        if lt >= LAYOUT_PRESENT:
            put("layout-transforms", "present", f"NCHW<->NHWC kernels = {lt:.2%} of kernel time (>= {LAYOUT_PRESENT:.0%})")
        elif lt + tr < LAYOUT_ABSENT:
            put("layout-transforms", "absent", f"NCHW<->NHWC kernels = {lt:.2%}, other transposes beside convolutions = {tr:.2%} of kernel time")
        g, sf, tc = f["gemm_conv_frac_of_kernel_time"], f["simt_fp32_frac_of_gemm_conv"], f["tensor_cores"]
        if g < FP32_GEMM_NEGLIGIBLE or sf < FP32_ABSENT:
            put("fp32-without-tensor-cores", "absent", f"GEMM/conv = {g:.2%} of kernel time, SIMT fp32 = {sf:.2%} of it")
        elif tc is False:
            put("fp32-without-tensor-cores", "absent", f"GPU without tensor cores ({f['gpu_names']})")
        elif tc and sf >= FP32_PRESENT and g >= FP32_GEMM_MIN:
            put("fp32-without-tensor-cores", "present", f"SIMT fp32 = {sf:.2%} of GEMM/conv time, GEMM/conv = {g:.2%} of kernel time, tensor cores on {f['gpu_names']}")
        band("fusion-candidates", f["elementwise_chain_frac_of_kernel_time"], FUSION_PRESENT, FUSION_ABSENT, f"runs of >= {FUSION_RUN} short element-wise kernels, share of kernel time")
        if "step_edge_idle_frac_median" in f and f["step_edge_idle_frac_median"] is not None:
            band("host-only-time", f["step_edge_idle_frac_median"], HOST_PRESENT, HOST_ABSENT, "GPU idle at step edges outside DataLoader/sync/alloc (median over steps)")

    # attention
    blocks = f["attention_cpu_blocks"] + f["attention_kernel_blocks"]
    if f["fused_attention"]:
        put("unfused-attention", "absent", f"fused attention in the trace ({', '.join(f['fused_attention'])})")
    elif blocks >= max(2, f["iterations"]):
        put("unfused-attention", "present", f"{blocks} GEMM->softmax->GEMM blocks ({f['iterations']} iterations), no fused attention")
    elif blocks == 0:
        put("unfused-attention", "absent", "no GEMM->softmax->GEMM sequence")

    # optimizer / zero_grad
    if not f["training"]:
        put("optimizer-not-fused", "absent", "no backward or optimizer: not training")
        put("zero-grad-memset", "absent", "no backward or optimizer: not training")
    else:
        if f["optimizer_calls"]:
            ops, ks, fused = f["optimizer_top_aten_ops_per_call"], f["optimizer_kernels_per_call"], f["optimizer_calls_with_foreach_or_fused"]
            if fused * 2 >= f["optimizer_calls"]:
                put("optimizer-not-fused", "absent", f"_foreach_/_fused_ ops in {fused} of {f['optimizer_calls']} Optimizer.step calls")
            elif max(ops, ks) >= OPT_PRESENT:
                put("optimizer-not-fused", "present", f"no _foreach_/_fused_ op; {ops} top-level aten ops and {ks} kernels per Optimizer.step call")
            elif max(ops, ks) < OPT_ABSENT:
                put("optimizer-not-fused", "absent", f"only {ops} top-level aten ops and {ks} kernels per Optimizer.step call")
        if f["zero_grad_calls"]:
            z = f["zero_grad_zero_ops_per_call"]
            if z >= ZERO_PRESENT and f["zero_grad_calls_writing_zeros"] * 2 >= f["zero_grad_calls"]:
                put("zero-grad-memset", "present", f"{z} zero/fill ops or kernels per zero_grad call (median of {f['zero_grad_calls']})")
            elif z == 0 and f["zero_grad_calls_writing_zeros"] == 0:
                put("zero-grad-memset", "absent", f"zero_grad writes no zeros in any of {f['zero_grad_calls']} calls (set_to_none)")
    return out


# The figures each id's label rests on (recorded with the label).
FIGURES_OF = {
    "dataloader-bottleneck": ["dataloader_ranges", "dataloader_gpu_idle_frac_of_window", "dataloader_gpu_idle_ms", "dataloader_frac_of_window", "windows_from", "window_ms"],
    "allocator-churn": ["alloc_calls_after_first_kernel", "alloc_time_frac_of_window", "windows_from", "window_ms"],
    "host-device-sync": ["sync_calls", "sync_calls_followed_by_gpu_idle", "sync_idle_frac_of_active", "iterations", "gpu_active_ms"],
    "pageable-memcpy": ["pageable_copies", "pageable_bytes_per_iteration", "pageable_frac_of_active", "iterations", "iterations_from"],
    "host-only-time": ["step_edge_idle_frac_median", "windows_from"],
    "optimizer-not-fused": ["training", "optimizer_calls", "optimizer_top_aten_ops_per_call", "optimizer_kernels_per_call", "optimizer_calls_with_foreach_or_fused"],
    "launch-bound-small-kernels": ["short_gap_idle_frac_of_active", "median_kernel_us", "kernels", "gpu_busy_frac_of_active", "gpu_active_ms"],
    "gpu-low-utilization": ["gpu_busy_frac_of_active", "long_gap_idle_frac_of_active", "short_gap_idle_frac_of_active", "gpu_active_ms"],
    "communication-exposed": ["collective_frac_of_active", "collective_exposed_frac_of_active"],
    "layout-transforms": ["layout_frac_of_kernel_time", "other_transpose_frac_of_kernel_time_with_conv"],
    "fp32-without-tensor-cores": ["gemm_conv_frac_of_kernel_time", "simt_fp32_frac_of_gemm_conv", "tensor_cores", "gpu_names"],
    "unfused-attention": ["attention_cpu_blocks", "attention_kernel_blocks", "fused_attention", "iterations", "iterations_from"],
    "zero-grad-memset": ["training", "zero_grad_calls", "zero_grad_zero_ops_per_call", "zero_grad_calls_writing_zeros"],
    "fusion-candidates": ["elementwise_chain_frac_of_kernel_time"],
    "heavy-memcpy": ["memcpy_frac_of_active"],
}


def label_file(path):
    """{"figures", "labels": id -> {label, method, reason, figures}} or {"note"}."""
    loaded, why = load(path)
    if loaded is None:
        return {"note": why, "labels": {}}
    f = measure(*loaded)
    labels = judge(f)
    return {
        "figures": f,
        "labels": {
            i: {
                "label": labels[i][0],
                "method": "independent-script",
                "reason": labels[i][1],
                "figures": {k: f[k] for k in ["cpu_only"] + FIGURES_OF[i] if k in f},
            }
            for i in IDS
            if i in labels
        },
    }


def label_dir(root):
    out = {}
    for dp, _, fns in sorted(os.walk(root)):
        for fn in sorted(fns):
            if fn in ("CATALOG.md", "MANIFEST.tsv") or fn.endswith(".md"):
                continue
            p = os.path.join(dp, fn)
            out[os.path.relpath(p, root)] = label_file(p)
    return out


def merge(labels_path, root):
    """The label file at `labels_path` with this script's labels added under `independent` for
    every trace, and the traces it does not hold yet appended (workload from this script's
    training evidence, no figures-rubric labels). A capture whose figures equal an earlier
    one's (the same events under another name) keeps no labels, so it is not counted twice."""
    with open(labels_path) as fh:
        doc = json.load(fh)
    ours = label_dir(root)
    by_trace = {t["trace"]: t for t in doc["traces"]}
    seen = {}
    for name in [t["trace"] for t in doc["traces"]] + sorted(set(ours) - set(by_trace)):
        res = ours.get(name, {"note": "not found by the independent script", "labels": {}})
        entry = by_trace.get(name)
        if entry is None:
            f = res.get("figures", {})
            entry = {
                "trace": name,
                "workload": "training" if f.get("training") else "inference",
                "healthy_control": False,
                "present": {},
                "absent": {},
            }
            doc["traces"].append(entry)
        else:
            entry["method"] = "figures-rubric"
        key = json.dumps({k: v for k, v in res.get("figures", {}).items() if k != "gpu_used_but_not_recorded"}, sort_keys=True)
        if "figures" in res and key in seen:
            entry["independent_note"] = f"same events as {seen[key]}: not labelled again"
            entry["independent"] = {}
            continue
        if "figures" in res:
            seen[key] = name
        if "note" in res:
            entry["independent_note"] = res["note"]
        elif not res["labels"]:
            entry["independent_note"] = "nothing clear enough to label"
        entry["independent"] = res["labels"]
    return doc


def main(argv):
    if len(argv) == 4 and argv[1] == "--merge":
        json.dump(merge(argv[2], argv[3]), sys.stdout, indent=1)
        print()
        return
    if len(argv) != 2:
        sys.exit("usage: label_independent.py TRACES_DIR_OR_FILE | --merge LABELS.json TRACES_DIR")
    target = argv[1]
    if os.path.isfile(target):
        json.dump(label_file(target), sys.stdout, indent=1)
    else:
        json.dump(label_dir(target), sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main(sys.argv)
