#!/usr/bin/env python3
"""Measure, from the raw Kineto JSON, the figures that docs/LABELS.md's rubric needs.

Independent of TorchTraceAP: stdlib only, reads the trace once, prints JSON.

    python3 scripts/label_figures.py TRACE [TRACE ...]          # one JSON object per trace
    python3 scripts/label_figures.py --root ../shared/traces --all-listed models/real-labels.json

Times are in microseconds in the trace; figures are reported in ms or as fractions (0..1)
of the step ("_frac" suffix) unless the name says otherwise.
"""
import bisect
import gzip
import json
import re
import statistics
import sys

# ---------------------------------------------------------------- categories
CAT = {
    'kernel': 'kernel', 'Kernel': 'kernel',
    'gpu_memcpy': 'memcpy', 'Memcpy': 'memcpy',
    'gpu_memset': 'memset', 'Memset': 'memset',
    'cuda_runtime': 'runtime', 'Runtime': 'runtime', 'cuda_driver': 'runtime',
    'cpu_op': 'cpu_op', 'Operator': 'cpu_op',
    'user_annotation': 'user_annotation',
    'gpu_user_annotation': 'gpu_user_annotation',
    'python_function': 'python_function',
}

SYNC_RE = re.compile(r'^(cuda|hip)(DeviceSynchronize|StreamSynchronize|EventSynchronize|Memcpy|Memcpy2D|Memcpy3D|MemcpyDtoH|MemcpyHtoD|MemcpyWithStream)$'
                     r'|^cu(CtxSynchronize|StreamSynchronize|EventSynchronize|MemcpyDtoH|MemcpyHtoD|Memcpy)(_v2)?$')
ALLOC_RE = re.compile(r'^(cuda|hip)(Malloc|Free|HostAlloc|HostMalloc|MallocHost|FreeHost|HostFree|MallocManaged|ExtMallocWithFlags)\w*$'
                      r'|^cuMem(Alloc|Free)\w*$')
LAUNCH_RE = re.compile(r'Launch|cuGraphLaunch|hipModuleLaunch')
COLL_RE = re.compile(r'nccl|rccl', re.I)
SIMT_RE = re.compile(r'sgemm|scudnn|implicit_convolve_sgemm|gemmSN|simt|Cijk_\w*_SB_', re.I)
TC_RE = re.compile(r'xmma|wgmma|hmma|tensorop|s884|s1688|s16816|h884|h1688|h16816|mfma|_MI\d+x\d+x', re.I)  # Tensile _MI16x16x1_ = MFMA
LAYOUT_RE = re.compile(r'nchwToNhwc|nhwcToNchw|batched_transpose|transpose_NCHW|nchw2nhwc|nhwc2nchw', re.I)
# 'conv' alone would match 'Convert' (e.g. FlashAttnBwdPostprocessConvertdQ), so conv names are spelled out
CONV_RE = re.compile(r'convolv|convolution|conv[123]d|conv_|_conv|Conv2d|scudnn|winograd|fprop|dgrad|wgrad|implicit_gemm|igemm|miopenSp3Asm|cudnn::detail|cask_cudnn', re.I)
GEMM_KERNEL_RE = re.compile(r'gemm|Cijk_|cutlass|xmma|wgmma|hmma|s16816|s1688|s884|h16816|h1688|h884|ampere_|volta_|turing_|sm80_|sm90_|nvjet|matmul|bmm', re.I)
SOFTMAX_RE = re.compile(r'softmax', re.I)
ELEMWISE_RE = re.compile(r'elementwise_kernel|reduce_kernel|triton_poi', re.I)
FUSED_ATTN_RE = re.compile(r'scaled_dot_product_flash|scaled_dot_product_efficient|scaled_dot_product_cudnn|flash|fmha|mem_efficient|'
                           r'_native_multi_head_attention|paged_attention|unified_attention|attention_kernel|fused_attn', re.I)
MM_OPS = {'aten::bmm', 'aten::matmul', 'aten::baddbmm', 'aten::einsum'}
SOFTMAX_OPS = {'aten::softmax', 'aten::_softmax', 'aten::_safe_softmax', 'aten::special_softmax'}
DL_RE = re.compile(r'^enumerate\(DataLoader\)#.*__next__')
STEP_RE = re.compile(r'^ProfilerStep#(\d+)$')
BACKWARD_RE = re.compile(r'backward|Backward|autograd::engine|^Optimizer\.')
FILL_RE = re.compile(r'fill|zero|memset', re.I)


def load(path):
    op = gzip.open if path.endswith('.gz') else open
    with op(path, 'rb') as f:
        raw = f.read()
    return json.loads(raw)


# ---------------------------------------------------------------- intervals
def union(iv):
    """Sorted, merged list of (s, e)."""
    out = []
    for s, e in sorted(iv):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return [(a, b) for a, b in out]


def clip(iv, s, e):
    """Merged intervals clipped to [s, e]; iv must be a merged sorted list."""
    starts = [a for a, _ in iv]
    i = max(0, bisect.bisect_right(starts, s) - 1)
    out = []
    while i < len(iv) and iv[i][0] < e:
        a, b = iv[i]
        a, b = max(a, s), min(b, e)
        if b > a:
            out.append((a, b))
        i += 1
    return out


def total(iv):
    return sum(b - a for a, b in iv)


def intersect(x, y):
    """Both merged sorted; returns merged intersection."""
    i = j = 0
    out = []
    while i < len(x) and j < len(y):
        a = max(x[i][0], y[j][0])
        b = min(x[i][1], y[j][1])
        if b > a:
            out.append((a, b))
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return out


def complement(iv, s, e):
    out = []
    cur = s
    for a, b in iv:
        if a > cur:
            out.append((cur, min(a, e)))
        cur = max(cur, b)
        if cur >= e:
            break
    if cur < e:
        out.append((cur, e))
    return [(a, b) for a, b in out if b > a]


def subtract(x, y):
    """x minus y, both merged sorted."""
    out = []
    for a, b in x:
        for c, d in clip(y, a, b):
            if c > a:
                out.append((a, c))
            a = d
        if b > a:
            out.append((a, b))
    return out


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def r(x, n=4):
    if x is None:
        return None
    return round(x, n)


# ---------------------------------------------------------------- main measure
def measure(path):
    try:
        d = load(path)
    except (ValueError, UnicodeDecodeError, OSError) as ex:
        return {'trace': path, 'kineto': False, 'why': 'not JSON: %s' % type(ex).__name__}
    if not isinstance(d, dict) or 'traceEvents' not in d:
        return {'trace': path, 'kineto': False, 'why': 'no traceEvents dict'}
    evs = d['traceEvents']
    props = d.get('deviceProperties') or []
    is_hip = 'hip_runtime_version' in d or 'roctracer_version' in d

    gpu = []        # (ts, end, dev, stream, kind, name, args)
    runtime = []    # (ts, end, pid, tid, name, corr)
    cpu_ops = []    # (ts, end, pid, tid, name, category)  cpu_op + user_annotation
    steps = {}
    dl = []
    cats = {}
    n_python = 0
    for e in evs:
        if not isinstance(e, dict) or e.get('ph') != 'X':
            continue
        c = CAT.get(e.get('cat'))
        if c is None:
            continue
        cats[c] = cats.get(c, 0) + 1
        try:
            ts = float(e['ts'])
            dur = float(e.get('dur') or 0)
        except (KeyError, TypeError, ValueError):
            continue
        name = e.get('name') or ''
        args = e.get('args') or {}
        if c in ('kernel', 'memcpy', 'memset'):
            dev = args.get('device', e.get('pid'))
            stream = args.get('stream', e.get('tid'))
            gpu.append((ts, ts + dur, str(dev), str(stream), c, name, args))
        elif c == 'runtime':
            runtime.append((ts, ts + dur, e.get('pid'), e.get('tid'), name, args.get('correlation')))
        elif c in ('cpu_op', 'user_annotation'):
            m = STEP_RE.match(name)
            if m:
                n = int(m.group(1))
                # keep the outermost range per step number
                if n not in steps or dur > steps[n][1] - steps[n][0]:
                    steps[n] = (ts, ts + dur)
                continue
            if DL_RE.match(name):
                dl.append((ts, ts + dur))
            cpu_ops.append((ts, ts + dur, e.get('pid'), e.get('tid'), name, c))
        elif c == 'python_function':
            n_python += 1

    out = {'trace': path, 'kineto': True, 'categories': cats, 'hip': is_hip,
           'n_gpu_events': len(gpu), 'n_cpu_ops': len(cpu_ops), 'n_runtime': len(runtime)}
    n_kernels_all = sum(1 for g in gpu if g[4] == 'kernel')
    out['n_kernels_all_devices'] = n_kernels_all
    if n_kernels_all == 0:
        out['no_kernels'] = True
        return out

    # --- main device = most busy time (union)
    by_dev = {}
    for g in gpu:
        by_dev.setdefault(g[2], []).append((g[0], g[1]))
    busy_dev = {k: total(union(v)) for k, v in by_dev.items()}
    main = max(busy_dev, key=busy_dev.get)
    out['devices_busy_ms'] = {k: r(v / 1000, 3) for k, v in busy_dev.items()}
    out['main_device'] = main
    g_main = sorted((g for g in gpu if g[2] == main), key=lambda g: g[0])
    busy_iv = union([(g[0], g[1]) for g in g_main])
    kernels = [g for g in g_main if g[4] == 'kernel']
    corr_to_gpu = {}
    for g in g_main:
        cid = g[6].get('correlation')
        if cid is not None:
            corr_to_gpu.setdefault(cid, []).append(g)

    # --- device properties / tensor cores
    prop = None
    for p in props:
        if str(p.get('id')) == main:
            prop = p
    if prop is None and props:
        prop = props[0]
    tc = None
    if prop:
        nm = prop.get('name') or ''
        cm = prop.get('computeMajor')
        if is_hip or re.search(r'AMD|Radeon|Instinct', nm):
            # MFMA: Instinct MI100/MI2xx/MI3xx. Generic/empty names: a gfx9 part with >=32 GB and 64-wide
            # waves is an Instinct (the consumer gfx9 Vega parts had <=16 GB).
            if re.search(r'MI1\d\d|MI2\d\d|MI3\d\d|Instinct', nm):
                tc = True
            elif cm == 9 and (prop.get('totalGlobalMem') or 0) >= 32 * 2**30 and prop.get('warpSize') == 64:
                tc = True
            else:
                tc = None
        elif isinstance(cm, int):
            tc = cm >= 7
    out['device_name'] = (prop or {}).get('name')
    out['compute_major'] = (prop or {}).get('computeMajor')
    out['tensor_cores'] = tc

    # --- steps
    step_list = sorted(steps.items())
    windows = [(n, s, e) for n, (s, e) in step_list if e > s]
    has_steps = bool(windows)
    warmup_dropped = False
    if not windows:
        # one step over the GPU active span (first launch of main-device work .. last GPU work end)
        first_gpu = busy_iv[0][0]
        launch_ts = [rt[0] for rt in runtime if rt[5] is not None and rt[5] in corr_to_gpu]
        s = min([first_gpu] + launch_ts)
        e = busy_iv[-1][1]
        windows = [(None, s, e)]
    stub_dropped = 0
    if len(windows) >= 2:
        # refinement: a ProfilerStep with no main-device GPU work at all (typically the last range, cut short
        # when the profiler stopped) is not a step of the workload; drop it before the warm-up rule
        def has_work(s, e):
            return bool(clip(busy_iv, s, e)) or any(s <= lt <= e for lt in launch_ts0)
        launch_ts0 = sorted(rt[0] for rt in runtime if rt[5] is not None and rt[5] in corr_to_gpu)
        kept = [w for w in windows if has_work(w[1], w[2])]
        if kept and len(kept) < len(windows):
            stub_dropped = len(windows) - len(kept)
            windows = kept
    if len(windows) >= 2:
        lens = [e - s for _, s, e in windows]
        m_others = statistics.median(lens[1:])
        if lens[0] > 1.25 * m_others:
            windows = windows[1:]
            warmup_dropped = True
    out['has_profiler_steps'] = has_steps
    out['n_steps_total'] = len(step_list) if has_steps else 0
    out['warmup_dropped'] = warmup_dropped
    out['stub_steps_dropped'] = stub_dropped
    out['n_steady_steps'] = len(windows)

    # --- attribution interval sets
    dl_iv = union(dl)
    # top-level runtime calls are on the host; they are attributed irrespective of thread
    alloc_iv = union([(rt[0], rt[1]) for rt in runtime if ALLOC_RE.match(rt[4])])
    sync_calls = [rt for rt in runtime if SYNC_RE.match(rt[4])]
    sync_iv = union([(rt[0], rt[1] + 1000.0) for rt in sync_calls])  # during the blocking call and the 1 ms after it
    n_alloc_calls = sum(1 for rt in runtime if ALLOC_RE.match(rt[4]))

    # --- kernel-level classifications (main device)
    def kind_time(pred, seq):
        return sum(g[1] - g[0] for g in seq if pred(g[5]))

    # collective not overlapped by compute on other streams
    coll = [g for g in kernels if COLL_RE.search(g[5])]
    comp_by_stream = {}
    for g in kernels:
        if not COLL_RE.search(g[5]):
            comp_by_stream.setdefault(g[3], []).append((g[0], g[1]))
    comp_by_stream = {st: union(v) for st, v in comp_by_stream.items()}

    # elementwise chains per stream: >= 4 short element-wise kernels back to back, i.e. <= 10 us
    # apart on the GPU, or (GPU gap < 1 ms) launched by the same outermost cpu_op or by the
    # cpu_op the host ran next (<= 50 us after the previous one ended)
    top_ops = {}    # (pid, tid) -> outermost cpu_op ranges, sorted
    for op in sorted((op for op in cpu_ops if op[5] == 'cpu_op'), key=lambda o: (o[0], -o[1])):
        tops = top_ops.setdefault((op[2], op[3]), [])
        if not tops or op[0] >= tops[-1][1]:
            tops.append(op)
    top_starts = {k: [o[0] for o in v] for k, v in top_ops.items()}
    corr_to_op = {}
    for rt in runtime:
        k = (rt[2], rt[3])
        if rt[5] is None or k not in top_ops:
            continue
        j = bisect.bisect_right(top_starts[k], rt[0]) - 1
        if j >= 0 and rt[0] <= top_ops[k][j][1]:
            corr_to_op[rt[5]] = (k, j)

    def back_to_back(p, g):
        gap = g[0] - p[1]
        if gap <= 10.0:
            return True
        if gap >= 1000.0:
            return False
        x, y = corr_to_op.get(p[6].get('correlation')), corr_to_op.get(g[6].get('correlation'))
        if x is None or y is None:
            return False
        if x == y:
            return True
        if x[0] != y[0]:
            return False
        ox, oy = top_ops[x[0]][x[1]], top_ops[y[0]][y[1]]
        return ox[1] <= oy[0] <= ox[1] + 50.0

    chain_kernels = []
    by_stream = {}
    for g in kernels:
        by_stream.setdefault(g[3], []).append(g)
    for st, ks in by_stream.items():
        run = []
        for g in ks:
            ok = ELEMWISE_RE.search(g[5]) and (g[1] - g[0]) < 20.0
            if ok and run and back_to_back(run[-1], g):
                run.append(g)
            else:
                if len(run) >= 4:
                    chain_kernels.extend(run)
                run = [g] if ok else []
        if len(run) >= 4:
            chain_kernels.extend(run)

    # kernel-name attention: GEMM -> softmax -> GEMM on a stream (up to 3 other kernels between)
    attn_kernel_seq = 0
    for st, ks in by_stream.items():
        names = [g[5] for g in ks]
        for i, nm in enumerate(names):
            if not SOFTMAX_RE.search(nm) or FUSED_ATTN_RE.search(nm):
                continue
            before = any(GEMM_KERNEL_RE.search(x) and not SOFTMAX_RE.search(x) for x in names[max(0, i - 4):i])
            after = any(GEMM_KERNEL_RE.search(x) and not SOFTMAX_RE.search(x) for x in names[i + 1:i + 5])
            if before and after:
                attn_kernel_seq += 1

    # --- CPU op tree: unfused attention siblings, optimizer/zero_grad ranges, training
    fused_attn_ops = sorted({op[4] for op in cpu_ops if FUSED_ATTN_RE.search(op[4])})
    fused_attn_kernels = sorted({g[5][:80] for g in kernels if FUSED_ATTN_RE.search(g[5])})
    training_markers = sorted({op[4] for op in cpu_ops if BACKWARD_RE.search(op[4])})[:8]
    is_training = bool(training_markers)

    by_thread = {}
    for op in cpu_ops:
        by_thread.setdefault((op[2], op[3]), []).append(op)
    attn_cpu = []   # ts of softmax ops in an mm-softmax-mm sibling pattern
    for key, ops in by_thread.items():
        ops.sort(key=lambda o: (o[0], -o[1]))
        stack = []
        children = {}
        roots = []
        for o in ops:
            while stack and not (o[0] >= stack[-1][0] and o[1] <= stack[-1][1] + 0.01):
                stack.pop()
            (children.setdefault(id(stack[-1]), []) if stack else roots).append(o)
            stack.append(o)
        for sib in list(children.values()) + [roots]:
            names = [o[4] for o in sib]
            for i, nm in enumerate(names):
                if nm in SOFTMAX_OPS:
                    before = any(x in MM_OPS for x in names[max(0, i - 5):i])
                    after = any(x in MM_OPS for x in names[i + 1:i + 6])
                    if before and after:
                        attn_cpu.append(sib[i][0])

    # launches: runtime calls whose correlation reaches main-device GPU work
    launches = [(rt[0], rt[2], rt[3], corr_to_gpu[rt[5]]) for rt in runtime
                if rt[5] is not None and rt[5] in corr_to_gpu]
    launches.sort(key=lambda x: x[0])
    launch_ts = [x[0] for x in launches]

    def launched_in(s, e, pid, tid):
        i = bisect.bisect_left(launch_ts, s)
        res = []
        while i < len(launches) and launches[i][0] <= e:
            if launches[i][1] == pid and launches[i][2] == tid:
                res.extend(launches[i][3])
            i += 1
        return res

    opt_ranges = [op for op in cpu_ops if op[4].startswith('Optimizer.step#')]
    zg_ranges = [op for op in cpu_ops if op[4].startswith('Optimizer.zero_grad#')]
    foreach_ops = [op for op in cpu_ops if '_foreach_' in op[4] or '_fused_' in op[4]]
    fe_ts = sorted(op[0] for op in foreach_ops)

    def opt_info(op):
        ks = [g for g in launched_in(op[0], op[1], op[2], op[3]) if g[4] == 'kernel']
        i = bisect.bisect_left(fe_ts, op[0])
        has_fe = i < len(fe_ts) and fe_ts[i] <= op[1]
        return len(ks), has_fe

    def zg_info(op):
        ws = launched_in(op[0], op[1], op[2], op[3])
        return sum(1 for g in ws if g[4] == 'memset' or (g[4] == 'kernel' and FILL_RE.search(g[5])))

    # --- per step figures
    per = []
    for n, s, e in windows:
        L = e - s
        b = clip(busy_iv, s, e)
        busy = total(b)
        idle = complement(b, s, e)
        if b:
            first, last = b[0][0], b[-1][1]
        else:
            first = last = e
        before = first - s if b else L
        after = e - last if b else 0.0
        mid_idle = clip(idle, first, last) if b else []
        idle_dl = total(intersect(idle, clip(dl_iv, s, e)))
        idle_alloc = total(intersect(idle, clip(alloc_iv, s, e)))
        idle_sync = total(intersect(idle, clip(sync_iv, s, e)))
        attributed = union(clip(dl_iv, s, e) + clip(alloc_iv, s, e) + clip(sync_iv, s, e))
        mid_unattr = total(subtract(mid_idle, attributed))
        mid_dl = total(intersect(mid_idle, clip(dl_iv, s, e)))
        edge_idle = [(s, first), (last, e)] if b else [(s, e)]
        edge_idle = [(a, c) for a, c in edge_idle if c > a]
        edge_minus_dl = total(subtract(edge_idle, clip(dl_iv, s, e)))
        ks = [g for g in kernels if s <= g[0] < e]
        n_k = len(ks)
        small = sum(1 for g in ks if g[1] - g[0] < 10.0)
        ktime = sum(g[1] - g[0] for g in ks)
        cps = [g for g in g_main if g[4] == 'memcpy' and s <= g[0] < e]
        pg = [g for g in cps if 'Pageable' in g[5] or 'pageable' in str(g[6].get('memory kind', '')).lower()]
        cp_time = total(clip(union([(g[0], g[1]) for g in cps]), s, e))
        coll_s = [g for g in coll if s <= g[0] < e]
        coll_time = total(clip(union([(g[0], g[1]) for g in coll_s]), s, e))
        coll_exposed = 0.0
        for g in coll_s:
            others = union([iv for st, v in comp_by_stream.items() if st != g[3] for iv in clip(v, g[0], g[1])])
            coll_exposed += (g[1] - g[0]) - total(others)
        ch = sum(g[1] - g[0] for g in chain_kernels if s <= g[0] < e)
        opts = [opt_info(op) for op in opt_ranges if s <= op[0] < e]
        zgs = [zg_info(op) for op in zg_ranges if s <= op[0] < e]
        attn_n = sum(1 for t in attn_cpu if s <= t < e)
        sm_time = sum(g[1] - g[0] for g in ks if SOFTMAX_RE.search(g[5]))
        simt = sum(g[1] - g[0] for g in ks if SIMT_RE.search(g[5]) and not TC_RE.search(g[5]))
        lay = sum(g[1] - g[0] for g in ks if LAYOUT_RE.search(g[5]))
        conv = sum(g[1] - g[0] for g in ks if CONV_RE.search(g[5]) and not LAYOUT_RE.search(g[5]))
        per.append({
            'step': n, 'start_us': r(s, 3), 'step_ms': r(L / 1000, 4),
            'busy_frac': r(busy / L), 'mid_idle_frac': r(total(mid_idle) / L),
            'mid_idle_unattributed_frac': r(mid_unattr / L), 'mid_idle_dataloader_frac': r(mid_dl / L),
            'idle_before_frac': r(before / L), 'idle_after_frac': r(after / L),
            'edge_idle_minus_dataloader_frac': r(edge_minus_dl / L),
            'idle_dataloader_frac': r(idle_dl / L), 'idle_alloc_frac': r(idle_alloc / L),
            'idle_after_sync_frac': r(idle_sync / L),
            'sync_window_frac': r(total(clip(sync_iv, s, e)) / L),
            'n_kernels': n_k, 'small_kernel_share': r(small / n_k) if n_k else None,
            'kernel_time_ms': r(ktime / 1000, 4),
            'pageable_copies': len(pg), 'pageable_bytes': sum(int(g[6].get('bytes') or 0) for g in pg),
            'pageable_frac': r(total(clip(union([(g[0], g[1]) for g in pg]), s, e)) / L),
            'memcpy_frac': r(cp_time / L), 'n_memcpy': len(cps),
            'collective_frac': r(coll_time / L), 'collective_exposed_frac': r(coll_exposed / L),
            'elementwise_chain_kernel_share': r(ch / ktime) if ktime else 0.0,
            'optimizer_steps': [{'kernels': k, 'foreach_or_fused': f} for k, f in opts],
            'zero_grad_fill_launches': zgs,
            'attn_cpu_patterns': attn_n, 'softmax_kernel_ms': r(sm_time / 1000, 4),
            'simt_fp32_kernel_share': r(simt / ktime) if ktime else None,
            'layout_ms': r(lay / 1000, 4), 'conv_ms': r(conv / 1000, 4),
            'layout_frac_of_step': r(lay / L),
        })

    def agg(key):
        return r(med([p[key] for p in per]))

    def most(pred):
        """Number of steady steps meeting pred, and whether that is at least half."""
        k = sum(1 for p in per if pred(p))
        return k, k * 2 >= len(per)

    out['steps'] = per
    med_keys = ['step_ms', 'busy_frac', 'mid_idle_frac', 'mid_idle_unattributed_frac', 'idle_before_frac',
                'idle_after_frac', 'edge_idle_minus_dataloader_frac', 'idle_dataloader_frac', 'idle_alloc_frac',
                'idle_after_sync_frac', 'sync_window_frac', 'n_kernels', 'small_kernel_share', 'pageable_copies', 'pageable_bytes',
                'pageable_frac', 'memcpy_frac', 'collective_frac', 'collective_exposed_frac', 'elementwise_chain_kernel_share',
                'attn_cpu_patterns', 'softmax_kernel_ms', 'simt_fp32_kernel_share', 'layout_ms', 'conv_ms',
                'layout_frac_of_step']
    out['median'] = {k: agg(k) for k in med_keys}
    # whole steady-window kernel shares (sums over steady steps, more stable than a median of ratios)
    kt = sum(p['kernel_time_ms'] for p in per)
    out['steady'] = {
        'kernel_time_ms': r(kt, 3),
        'simt_fp32_share': r(sum((p['simt_fp32_kernel_share'] or 0) * p['kernel_time_ms'] for p in per) / kt) if kt else None,
        'layout_over_conv': r(sum(p['layout_ms'] for p in per) / sum(p['conv_ms'] for p in per)) if sum(p['conv_ms'] for p in per) else None,
        'small_kernel_share': r(sum((p['small_kernel_share'] or 0) * p['n_kernels'] for p in per) / max(1, sum(p['n_kernels'] for p in per))),
    }
    out['most_steps'] = {
        'dataloader_idle_ge_5pct': most(lambda p: p['idle_dataloader_frac'] >= 0.05),
        'alloc_idle_ge_2pct': most(lambda p: p['idle_alloc_frac'] >= 0.02),
        'sync_idle_ge_2pct': most(lambda p: p['idle_after_sync_frac'] >= 0.02),
        'pageable_ge_1pct_or_1MB': most(lambda p: p['pageable_copies'] > 0 and (p['pageable_frac'] >= 0.01 or p['pageable_bytes'] >= 1 << 20)),
        'edge_idle_minus_dl_ge_25pct': most(lambda p: p['edge_idle_minus_dataloader_frac'] >= 0.25),
        'attn_pattern': most(lambda p: p['attn_cpu_patterns'] > 0),
        'zero_grad_fill': most(lambda p: any(z > 0 for z in p['zero_grad_fill_launches'])),
    }
    out['n_alloc_calls'] = n_alloc_calls
    out['n_sync_calls'] = len(sync_calls)
    out['sync_call_names'] = sorted({rt[4] for rt in sync_calls})
    out['n_dataloader_ranges'] = len(dl)
    out['training'] = is_training
    out['training_markers'] = training_markers
    out['fused_attention_ops'] = fused_attn_ops[:6]
    out['fused_attention_kernels'] = fused_attn_kernels[:6]
    out['attn_cpu_patterns_total'] = len(attn_cpu)
    out['attn_kernel_sequences_total'] = attn_kernel_seq
    out['n_collective_kernels'] = len(coll)
    out['n_optimizer_step_ranges'] = len(opt_ranges)
    out['n_zero_grad_ranges'] = len(zg_ranges)
    out['n_foreach_or_fused_ops'] = len(foreach_ops)
    out['n_python_function'] = n_python
    return out


def main(argv):
    paths = argv[1:]
    if not paths:
        print(__doc__)
        return 2
    if paths[0] == '--root':
        root, _, labels = paths[1], paths[2], paths[3]
        with open(labels) as f:
            paths = [root.rstrip('/') + '/' + t['trace'] for t in json.load(f)['traces']]
    res = [measure(p) for p in paths]
    json.dump(res[0] if len(res) == 1 else res, sys.stdout, indent=1)
    print()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
