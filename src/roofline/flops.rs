//! FLOPs and bytes of one operator from what the trace recorded: `Input Dims`, `Input type`
//! and, for convolutions and attention, `Concrete Inputs`. The one place these formulas live.
//!
//! Reference: PyTorch's `torch/utils/flop_counter.py` (`mm_flop`, `addmm_flop`, `bmm_flop`,
//! `baddbmm_flop`, `conv_flop_count`, `conv_backward_flop`, `sdpa_flop_count`,
//! `sdpa_backward_flop_count`): a multiply-add is 2 FLOPs; bias adds are not counted.
//! Where this differs from it, on purpose:
//! - causal attention counts half the score matrix (flop_counter counts all of it);
//! - a grouped convolution's weight gradient counts `Cin / groups` input channels (flop_counter's
//!   transposed-shape trick counts all `Cin`, `groups` times too many);
//! - `linear` and `matmul` have formulas (flop_counter sees their `mm`/`bmm`), used only where
//!   no inner op has one: the innermost op with a formula is charged (`super`).
//!
//! Convolution output sizes follow `torch.nn.Conv*d`: `(L + 2p - d(k-1) - 1) / s + 1`, and
//! transposed `(L-1)s - 2p + d(k-1) + output_padding + 1`. Without `Concrete Inputs` (traces
//! before PyTorch 2.2) stride 1, dilation 1 and an output the input's size are assumed.
//! `einsum` has none: traces record its equation as `""`; its `bmm`s are counted.
//!
//! Bytes are each tensor read or written once (what an ideal kernel moves): matrix ops read
//! their operands and write the product (Inductor's Triton kernels: [`inductor`]); normalizations and element-wise ops read every input
//! and write one tensor the size of the largest (in place: the first; `copy_`, `fill_`, `zero_`
//! only write), and count one FLOP per element written.

mod inductor;

use serde_json::Value;

/// What kind of work an op is: matrix families run on tensor / matrix cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Matrix,
    Convolution,
    Attention,
    Normalization,
    ElementWise,
}

impl Family {
    /// Matrix, convolution and attention: the FLOPs MFU counts.
    pub fn tensor_cores(self) -> bool {
        matches!(
            self,
            Family::Matrix | Family::Convolution | Family::Attention
        )
    }
}

/// The element type of an op's first tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    F64,
    F32,
    F16,
    Bf16,
    F8,
    /// Integers and booleans.
    Int,
}

impl Dtype {
    /// The dtype of an `Input type` entry, if it is a tensor's.
    pub fn of(text: &str) -> Option<Dtype> {
        Some(match text {
            "double" => Dtype::F64,
            "float" => Dtype::F32,
            "c10::Half" => Dtype::F16,
            "c10::BFloat16" => Dtype::Bf16,
            t if t.starts_with("c10::Float8") => Dtype::F8,
            "long int" | "int" | "short int" | "bool" | "unsigned char" | "signed char"
            | "long" | "short" => Dtype::Int,
            _ => return None,
        })
    }

    fn bytes_of(text: &str) -> Option<f64> {
        Some(match text {
            "double" | "long int" | "long" | "c10::complex<float>" => 8.0,
            "float" | "int" => 4.0,
            "c10::Half" | "c10::BFloat16" | "short int" | "short" => 2.0,
            "bool" | "unsigned char" | "signed char" => 1.0,
            t if t.starts_with("c10::Float8") => 1.0,
            _ => return None,
        })
    }

    pub fn label(self) -> &'static str {
        match self {
            Dtype::F64 => "fp64",
            Dtype::F32 => "fp32",
            Dtype::F16 => "fp16",
            Dtype::Bf16 => "bf16",
            Dtype::F8 => "fp8",
            Dtype::Int => "int",
        }
    }
}

/// One op's work.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    pub flops: f64,
    pub bytes: f64,
    pub family: Family,
    pub dtype: Dtype,
}

/// An op's recorded arguments, parsed.
struct Args {
    dims: Vec<Option<Vec<f64>>>,
    /// Bytes per element of each argument, where it is a tensor of a known dtype.
    elem: Vec<Option<f64>>,
    dtype: Option<Dtype>,
    scalars: Vec<String>,
}

impl Args {
    fn parse(dims: &str, types: Option<&str>, scalars: Option<&str>) -> Option<Args> {
        let dims: Vec<Value> = serde_json::from_str(dims).ok()?;
        let dims = dims
            .iter()
            .map(|d| {
                d.as_array()?
                    .iter()
                    .map(|x| x.as_u64().map(|v| v as f64))
                    .collect::<Option<Vec<f64>>>()
            })
            .collect();
        let types: Vec<String> = types
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        let scalars = scalars
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        Some(Args {
            dims,
            elem: types.iter().map(|t| Dtype::bytes_of(t)).collect(),
            dtype: types.first().and_then(|t| Dtype::of(t)),
            scalars,
        })
    }

    /// Argument `i`'s shape, if it is a tensor (`[]` for a 0-d tensor or a scalar).
    fn shape(&self, i: usize) -> Option<&[f64]> {
        self.dims.get(i)?.as_deref()
    }

    /// A tensor argument of exactly `rank` dimensions.
    fn ranked(&self, i: usize, rank: usize) -> Option<&[f64]> {
        self.shape(i).filter(|s| s.len() == rank)
    }

    fn elem(&self, i: usize) -> f64 {
        self.elem.get(i).copied().flatten().unwrap_or(0.0)
    }

    /// Argument `i`'s bytes (0 where not a tensor of known dtype).
    fn bytes(&self, i: usize) -> f64 {
        self.shape(i)
            .filter(|s| !s.is_empty())
            .map_or(0.0, |s| numel(s) * self.elem(i))
    }

    /// Every tensor argument's bytes.
    fn all_bytes(&self) -> f64 {
        (0..self.dims.len()).map(|i| self.bytes(i)).sum()
    }

    /// The first argument's element size: the output's.
    fn out_elem(&self) -> f64 {
        self.elem(0)
    }

    fn list(&self, i: usize) -> Option<Vec<f64>> {
        let s = self.scalars.get(i)?;
        serde_json::from_str::<Vec<i64>>(s)
            .ok()
            .map(|v| v.into_iter().map(|x| x as f64).collect())
    }

    fn flag(&self, i: usize) -> Option<bool> {
        match self.scalars.get(i)?.as_str() {
            "True" => Some(true),
            "False" => Some(false),
            _ => None,
        }
    }

    fn int(&self, i: usize) -> Option<f64> {
        self.scalars.get(i)?.parse::<i64>().ok().map(|v| v as f64)
    }
}

fn numel(s: &[f64]) -> f64 {
    s.iter().product()
}

/// The cost of op `name` from its `Input Dims`, `Input type` and `Concrete Inputs` text.
/// `None` for an op without a formula or with shapes that do not fit it.
pub fn cost(name: &str, dims: &str, types: Option<&str>, scalars: Option<&str>) -> Option<Cost> {
    let Some(op) = name.strip_prefix("aten::") else {
        return inductor::cost(name, dims, types);
    };
    let family = family(op)?;
    let a = Args::parse(dims, types, scalars)?;
    let (flops, bytes) = match family {
        Family::Matrix => matrix(op, &a)?,
        Family::Convolution => convolution(op, &a)?,
        Family::Attention => attention(op, &a)?,
        Family::Normalization | Family::ElementWise => memory(op, &a)?,
    };
    let dtype = a.dtype?;
    (flops.is_finite() && bytes.is_finite()).then_some(Cost {
        flops,
        bytes,
        family,
        dtype,
    })
}

const ELEMENT_WISE: &[&str] = &[
    "add",
    "add_",
    "sub",
    "sub_",
    "mul",
    "mul_",
    "div",
    "div_",
    "neg",
    "abs",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "pow",
    "reciprocal",
    "relu",
    "relu_",
    "gelu",
    "gelu_",
    "gelu_backward",
    "silu",
    "silu_",
    "silu_backward",
    "sigmoid",
    "sigmoid_backward",
    "tanh",
    "tanh_backward",
    "threshold_backward",
    "hardtanh",
    "hardtanh_",
    "hardtanh_backward",
    "leaky_relu",
    "leaky_relu_",
    "clamp",
    "clamp_",
    "clamp_min",
    "clamp_min_",
    "where",
    "masked_fill",
    "masked_fill_",
    "addcmul_",
    "addcdiv_",
    "lerp_",
    "copy_",
    "fill_",
    "zero_",
    "native_dropout",
    "native_dropout_backward",
    "_softmax",
    "_softmax_backward_data",
    "_log_softmax",
    "_log_softmax_backward_data",
];

const NORMALIZATION: &[&str] = &[
    "native_layer_norm",
    "native_layer_norm_backward",
    "native_batch_norm",
    "native_batch_norm_backward",
    "_native_batch_norm_legit",
    "_native_batch_norm_legit_no_training",
    "cudnn_batch_norm",
    "cudnn_batch_norm_backward",
    "miopen_batch_norm",
    "miopen_batch_norm_backward",
    "native_group_norm",
    "native_group_norm_backward",
    "_fused_rms_norm",
    "_fused_rms_norm_backward",
];

fn family(op: &str) -> Option<Family> {
    Some(match op {
        "mm" | "addmm" | "bmm" | "baddbmm" | "matmul" | "linear" => Family::Matrix,
        "conv1d"
        | "conv2d"
        | "conv3d"
        | "convolution"
        | "_convolution"
        | "convolution_backward" => Family::Convolution,
        o if SDPA.iter().any(|(n, _)| *n == o) => Family::Attention,
        o if NORMALIZATION.contains(&o) => Family::Normalization,
        o if ELEMENT_WISE.contains(&o) => Family::ElementWise,
        _ => return None,
    })
}

/// `(flops, bytes)` of a matrix product.
fn matrix(op: &str, a: &Args) -> Option<(f64, f64)> {
    let e = a.out_elem();
    let (batch, m, k, n, operands) = match op {
        "mm" => mk_kn(
            a.ranked(0, 2)?,
            a.ranked(1, 2)?,
            1.0,
            a.bytes(0) + a.bytes(1),
        )?,
        "addmm" => mk_kn(a.ranked(1, 2)?, a.ranked(2, 2)?, 1.0, a.all_bytes())?,
        "bmm" | "baddbmm" => {
            let first = usize::from(op == "baddbmm");
            let (x, y) = (a.ranked(first, 3)?, a.ranked(first + 1, 3)?);
            (x[0] == y[0]).then_some(())?;
            mk_kn(&x[1..], &y[1..], x[0], a.all_bytes())?
        }
        "matmul" => {
            let (x, y) = (a.shape(0)?, a.shape(1)?);
            let (xb, m, k) = match x.len() {
                0 => return None,
                1 => (&[][..], 1.0, x[0]),
                r => (&x[..r - 2], x[r - 2], x[r - 1]),
            };
            let (yb, k2, n) = match y.len() {
                0 => return None,
                1 => (&[][..], y[0], 1.0),
                r => (&y[..r - 2], y[r - 2], y[r - 1]),
            };
            (k == k2).then_some(())?;
            (broadcast(xb, yb)?, m, k, n, a.bytes(0) + a.bytes(1))
        }
        _ => {
            // linear(input [..., k], weight [n, k], bias)
            let x = a.shape(0)?;
            let w = a.ranked(1, 2)?;
            let (&k, lead) = x.split_last()?;
            (k == w[1]).then_some(())?;
            (1.0, numel(lead), k, w[0], a.all_bytes())
        }
    };
    Some((2.0 * batch * m * k * n, operands + batch * m * n * e))
}

/// `[m, k] @ [k, n]` in `batch`: `(batch, m, k, n, operand bytes)`.
fn mk_kn(x: &[f64], y: &[f64], batch: f64, operands: f64) -> Option<(f64, f64, f64, f64, f64)> {
    (x[1] == y[0]).then_some((batch, x[0], x[1], y[1], operands))
}

/// The product of two batch shapes broadcast together.
fn broadcast(x: &[f64], y: &[f64]) -> Option<f64> {
    let rank = x.len().max(y.len());
    let at = |s: &[f64], i: usize| (i + s.len()).checked_sub(rank).map_or(1.0, |j| s[j]);
    (0..rank).try_fold(1.0, |acc, i| {
        let (p, q) = (at(x, i), at(y, i));
        (p == q || p == 1.0 || q == 1.0).then_some(acc * p.max(q))
    })
}

/// The scalar layout of a convolution op: where stride, padding, dilation, transposed,
/// output_padding and groups are in its `Concrete Inputs`.
struct ConvArgs {
    stride: usize,
    transposed: Option<usize>,
    groups: usize,
}

fn conv_args(op: &str) -> ConvArgs {
    match op {
        // conv{1,2,3}d(input, weight, bias, stride, padding, dilation, groups)
        "conv1d" | "conv2d" | "conv3d" => ConvArgs {
            stride: 3,
            transposed: None,
            groups: 6,
        },
        // convolution_backward(grad_output, input, weight, bias_sizes, stride, padding,
        // dilation, transposed, output_padding, groups, output_mask)
        "convolution_backward" => ConvArgs {
            stride: 4,
            transposed: Some(7),
            groups: 9,
        },
        // [_]convolution(input, weight, bias, stride, padding, dilation, transposed,
        // output_padding, groups, …)
        _ => ConvArgs {
            stride: 3,
            transposed: Some(6),
            groups: 8,
        },
    }
}

fn convolution(op: &str, a: &Args) -> Option<(f64, f64)> {
    let at = conv_args(op);
    let backward = op == "convolution_backward";
    let (x, w) = if backward {
        (a.shape(1)?, a.shape(2)?)
    } else {
        (a.shape(0)?, a.shape(1)?)
    };
    let spatial = x.len().checked_sub(2).filter(|&s| s >= 1)?;
    (w.len() == x.len()).then_some(())?;
    let transposed = at.transposed.and_then(|i| a.flag(i)).unwrap_or(false);
    let kernel = &w[2..];
    let groups = a
        .int(at.groups)
        .unwrap_or(if transposed { 1.0 } else { x[1] / w[1] });
    // Weight: [Cout, Cin/g, k…], transposed [Cin, Cout/g, k…].
    let c_out = if transposed { w[1] * groups } else { w[0] };
    let out: Vec<f64> = if backward {
        a.ranked(0, x.len())?[2..].to_vec()
    } else {
        let per = |i: usize, default: f64| {
            let v = a.list(i);
            move |d: usize| {
                v.as_ref()
                    .and_then(|v| v.get(d).or(v.first()))
                    .copied()
                    .unwrap_or(default)
            }
        };
        let stride = per(at.stride, 1.0);
        let padding = per(at.stride + 1, f64::NAN);
        let dilation = per(at.stride + 2, 1.0);
        let output_padding = per(at.stride + 4, 0.0);
        (0..spatial)
            .map(|d| {
                let (l, k, s, dl) = (x[2 + d], kernel[d], stride(d), dilation(d));
                let p = padding(d);
                if p.is_nan() {
                    // Unrecorded (or `"same"`): an output the input's size.
                    l
                } else if transposed {
                    (l - 1.0) * s - 2.0 * p + dl * (k - 1.0) + output_padding(d) + 1.0
                } else {
                    ((l + 2.0 * p - dl * (k - 1.0) - 1.0) / s).floor() + 1.0
                }
            })
            .collect()
    };
    (out.iter().all(|&o| o >= 1.0)).then_some(())?;
    // flop_counter's conv_flop_count: the points convolved (the output's, or the input's when
    // transposed) × the filter × batch × the weight's two channel dimensions × 2.
    let points = if transposed {
        numel(&x[2..])
    } else {
        numel(&out)
    };
    let one = 2.0 * points * numel(kernel) * x[0] * w[0] * w[1];
    let e = a.out_elem();
    let out_bytes = x[0] * c_out * numel(&out) * e;
    if backward {
        let mask = |i: usize| {
            a.scalars
                .get(10)
                .and_then(|m| serde_json::from_str::<Vec<bool>>(&m.to_lowercase()).ok())
                .and_then(|m| m.get(i).copied())
                .unwrap_or(true)
        };
        let (gi, gw) = (f64::from(u8::from(mask(0))), f64::from(u8::from(mask(1))));
        let read = a.bytes(0) + a.bytes(1) + a.bytes(2);
        Some((one * (gi + gw), read + gi * a.bytes(1) + gw * a.bytes(2)))
    } else {
        Some((one, a.bytes(0) + a.bytes(1) + a.bytes(2) + out_bytes))
    }
}

/// The attention ops with a formula and where each keeps `is_causal` in `Concrete Inputs`.
const SDPA: &[(&str, usize)] = &[
    ("scaled_dot_product_attention", 5),
    ("_scaled_dot_product_flash_attention", 4),
    ("_scaled_dot_product_efficient_attention", 6),
    ("_scaled_dot_product_cudnn_attention", 6),
    ("_scaled_dot_product_flash_attention_backward", 11),
    ("_scaled_dot_product_efficient_attention_backward", 11),
    ("_scaled_dot_product_cudnn_attention_backward", 14),
];

fn attention(op: &str, a: &Args) -> Option<(f64, f64)> {
    let backward = op.ends_with("_backward");
    let first = usize::from(backward);
    // q [b, h, s_q, d], k [b, h_kv, s_k, d], v [b, h_kv, s_k, d_v]
    let (q, k, v) = (
        a.ranked(first, 4)?,
        a.ranked(first + 1, 4)?,
        a.ranked(first + 2, 4)?,
    );
    let (b, h, s_q, d) = (q[0], q[1], q[2], q[3]);
    let (s_k, d_v) = (k[2], v[3]);
    (k[3] == d && v[2] == s_k).then_some(())?;
    let causal = SDPA
        .iter()
        .find(|(n, _)| *n == op)
        .and_then(|&(_, i)| a.flag(i))
        .unwrap_or(false);
    let half = if causal { 0.5 } else { 1.0 };
    let e = a.out_elem();
    if backward {
        // sdpa_backward_flop_count: scores recomputed, then 4 products for the gradients.
        let flops = 2.0 * b * h * s_q * s_k * (3.0 * d + 2.0 * d_v) * half;
        let grads = a.bytes(1) + a.bytes(2) + a.bytes(3);
        Some((flops, a.all_bytes() + grads))
    } else {
        let flops = 2.0 * b * h * s_q * s_k * (d + d_v) * half;
        Some((flops, a.all_bytes() + b * h * s_q * d_v * e))
    }
}

/// Normalizations and element-wise ops: bytes moved, a FLOP per element written.
fn memory(op: &str, a: &Args) -> Option<(f64, f64)> {
    let largest = (0..a.dims.len()).map(|i| a.bytes(i)).fold(0.0, f64::max);
    let elements = (0..a.dims.len())
        .filter_map(|i| a.shape(i).map(numel))
        .fold(0.0, f64::max);
    (largest > 0.0).then_some(())?;
    let written = match op {
        "copy_" | "fill_" | "zero_" => 0.0,
        o if o.ends_with('_') => a.bytes(0),
        _ => largest,
    };
    Some((elements, a.all_bytes() + written))
}

#[cfg(test)]
mod tests;
