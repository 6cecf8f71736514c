#!/usr/bin/env python3
"""Independent oracle for the roofline's FLOP counts: matrix, convolution and attention ops of
every trace given, read with Python's stock json module, each op's FLOPs computed from its
`Input Dims` and `Concrete Inputs` as the PyTorch documentation defines the ops (shapes written
out as named dimensions: batch, channels per group, output sizes), not from the project's code.

Usage: flops.py TRACE...   Prints one JSON object per trace, one a line:
{"file": path, "ops": {op name: [events counted, total FLOPs]}}
A multiply-add is 2 FLOPs; causal attention counts half its score matrix; a convolution's
backward counts the input and weight gradients output_mask asks for.
"""
import gzip
import json
import math
import sys
from collections import defaultdict

OP_CATS = {"cpu_op", "Operator"}


def text_of(path):
    """The trace's JSON text, gzip or plain."""
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def events_of(path):
    """The trace's events; of a cut file, the complete events before the cut."""
    text = text_of(path)
    try:
        trace = json.loads(text)
        return trace.get("traceEvents", []) if isinstance(trace, dict) else []
    except ValueError:
        pass
    at = text.find('"traceEvents"')
    at = text.find("[", at) + 1 if at >= 0 else 0
    decoder, events = json.JSONDecoder(), []
    while at > 0:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        try:
            event, at = decoder.raw_decode(text, at)
        except ValueError:
            break
        events.append(event)
    return events


def tensor(dims, i):
    """Argument i's shape, when it is a plain tensor's (a list of integers)."""
    if i >= len(dims) or not isinstance(dims[i], list):
        return None
    if not all(isinstance(x, int) for x in dims[i]):
        return None
    return dims[i]


def scalar(concrete, i):
    return concrete[i] if i < len(concrete) else ""


def int_list(text, n, default):
    """A `[2, 2]`-style scalar list widened to n entries, or the default for each."""
    try:
        v = json.loads(text)
    except (ValueError, TypeError):
        return [default] * n
    if isinstance(v, int):
        v = [v]
    if not isinstance(v, list) or not v:
        return [default] * n
    return [v[d] if d < len(v) else v[0] for d in range(n)]


def mm(m, k, n, batch=1):
    return 2 * batch * m * k * n


def matrix(name, d):
    if name == "aten::mm":
        a, b = tensor(d, 0), tensor(d, 1)
        (m, k), (k2, n) = a, b
        return mm(m, k, n) if k == k2 else None
    if name == "aten::addmm":
        (m, k), (k2, n) = tensor(d, 1), tensor(d, 2)
        return mm(m, k, n) if k == k2 else None
    if name in ("aten::bmm", "aten::baddbmm"):
        off = 1 if name == "aten::baddbmm" else 0
        (b, m, k), (b2, k2, n) = tensor(d, off), tensor(d, off + 1)
        return mm(m, k, n, b) if (b, k) == (b2, k2) else None
    if name == "aten::linear":
        x, w = tensor(d, 0), tensor(d, 1)
        rows = math.prod(x[:-1])
        out_features, in_features = w
        return mm(rows, in_features, out_features) if x[-1] == in_features else None
    if name == "aten::matmul":
        a, b = tensor(d, 0), tensor(d, 1)
        a = [1] + a if len(a) == 1 else a
        b = b + [1] if len(b) == 1 else b
        if a[-1] != b[-2]:
            return None
        lead_a, lead_b = a[:-2], b[:-2]
        width = max(len(lead_a), len(lead_b))
        lead_a = [1] * (width - len(lead_a)) + lead_a
        lead_b = [1] * (width - len(lead_b)) + lead_b
        batch = 1
        for p, q in zip(lead_a, lead_b):
            if p != q and 1 not in (p, q):
                return None
            batch *= max(p, q)
        return mm(a[-2], a[-1], b[-1], batch)
    return None


# name -> (index of input, index of weight, index of stride, index of transposed or None,
#          index of groups)
CONV = {
    "aten::conv1d": (0, 1, 3, None, 6),
    "aten::conv2d": (0, 1, 3, None, 6),
    "aten::conv3d": (0, 1, 3, None, 6),
    "aten::convolution": (0, 1, 3, 6, 8),
    "aten::_convolution": (0, 1, 3, 6, 8),
}


def conv_forward(name, d, c):
    xi, wi, si, ti, gi = CONV[name]
    x, w = tensor(d, xi), tensor(d, wi)
    n, c_in, *size = x
    dims = len(size)
    kernel = w[2:]
    transposed = ti is not None and scalar(c, ti) == "True"
    groups = int(scalar(c, gi)) if scalar(c, gi).isdigit() else None
    if transposed:
        # weight [in_channels, out_channels / groups, k...]
        c_out = w[1] * (groups or 1)
    else:
        c_out = w[0]
        groups = groups or c_in // w[1]
    if not c:
        out = size  # no scalars recorded: the project assumes an output of the input's size
    else:
        stride = int_list(scalar(c, si), dims, 1)
        pad_text = scalar(c, si + 1)
        dilation = int_list(scalar(c, si + 2), dims, 1)
        out_pad = int_list(scalar(c, si + 4), dims, 0) if transposed else [0] * dims
        if not pad_text.startswith("["):
            out = size
        else:
            pad = int_list(pad_text, dims, 0)
            out = []
            for l, k, s, p, dl, op in zip(size, kernel, stride, pad, dilation, out_pad):
                if transposed:
                    out.append((l - 1) * s - 2 * p + dl * (k - 1) + op + 1)
                else:
                    out.append((l + 2 * p - dl * (k - 1) - 1) // s + 1)
    # Each output point of each output channel sums (in channels per group) x (filter) products;
    # transposed, each input point scatters into every output channel of its group.
    if transposed:
        return 2 * n * c_in * (c_out // groups) * math.prod(kernel) * math.prod(size)
    return 2 * n * c_out * (c_in // groups) * math.prod(kernel) * math.prod(out)


def conv_backward(d, c):
    grad_out, x, w = tensor(d, 0), tensor(d, 1), tensor(d, 2)
    transposed = scalar(c, 7) == "True"
    mask_text = scalar(c, 10)
    mask = [True, True]
    if mask_text.startswith("["):
        mask = [part.strip() == "True" for part in mask_text.strip("[]").split(",")][:2]
    n = x[0]
    if transposed:
        points = math.prod(x[2:])
        c_in_total, per_group = w[0], w[1]
        one = 2 * n * c_in_total * per_group * math.prod(w[2:]) * points
    else:
        points = math.prod(grad_out[2:])
        c_out, per_group = w[0], w[1]
        one = 2 * n * c_out * per_group * math.prod(w[2:]) * points
    return one * (int(mask[0]) + int(mask[1]))


# name -> index of is_causal in Concrete Inputs, backward?
SDPA = {
    "aten::scaled_dot_product_attention": (5, False),
    "aten::_scaled_dot_product_flash_attention": (4, False),
    "aten::_scaled_dot_product_efficient_attention": (6, False),
    "aten::_scaled_dot_product_cudnn_attention": (6, False),
    "aten::_scaled_dot_product_flash_attention_backward": (11, True),
    "aten::_scaled_dot_product_efficient_attention_backward": (11, True),
    "aten::_scaled_dot_product_cudnn_attention_backward": (14, True),
}


def attention(name, d, c):
    causal_at, backward = SDPA[name]
    q = tensor(d, 1 if backward else 0)
    k = tensor(d, 2 if backward else 1)
    v = tensor(d, 3 if backward else 2)
    batch, heads, len_q, head_dim = q
    len_k, value_dim = k[2], v[3]
    scores = batch * heads * len_q * len_k
    if backward:
        # recompute q·kᵀ; grad scores = dO·vᵀ; dV = Pᵀ·dO; dQ = dS·k; dK = dSᵀ·q
        products = scores * (head_dim + value_dim + value_dim + head_dim + head_dim)
    else:
        products = scores * (head_dim + value_dim)
    flops = 2 * products
    return flops / 2 if scalar(c, causal_at) == "True" else flops


def flops_of(name, d, c):
    try:
        if name in CONV:
            return conv_forward(name, d, c)
        if name == "aten::convolution_backward":
            return conv_backward(d, c)
        if name in SDPA:
            return attention(name, d, c)
        return matrix(name, d)
    except (TypeError, ValueError, IndexError, ZeroDivisionError):
        return None


def main():
    for path in sys.argv[1:]:
        ops = defaultdict(lambda: [0, 0])
        try:
            events = events_of(path)
        except (ValueError, OSError, EOFError):
            events = []
        for e in events:
            if not isinstance(e, dict) or e.get("cat") not in OP_CATS:
                continue
            args = e.get("args") or {}
            dims = args.get("Input Dims")
            if not isinstance(dims, list):
                continue
            concrete = args.get("Concrete Inputs") or []
            f = flops_of(e.get("name", ""), dims, concrete)
            if f is not None and f > 0:
                ops[e["name"]][0] += 1
                ops[e["name"]][1] += f
        print(json.dumps({"file": path, "ops": ops}))


if __name__ == "__main__":
    main()
