//! Layout transforms: NCHW↔NHWC conversion kernels around convolutions; on a CPU-only trace,
//! the host ops that convert (`to_mkldnn`/`to_dense`, `contiguous(memory_format=channels_last)`)
//! in steps that convolve.

use super::contract::{
    finding, interval_checks, judge, About, Detector, Evidence, Fix, Gate, Judged, StepCheck,
    Verdict,
};
use crate::analysis::Analysis;
use crate::attribution::Ledger;
use crate::metrics::{in_range, merge, total};
use crate::model::kernels::KernelNames;
use crate::model::{EventKind, Trace, NONE};

pub(crate) struct LayoutTransforms;

/// Layout kernels from this share of convolution time…
const SHARE_OF_CONV: f64 = 0.05;
/// …and this share of the step.
const GATE: Gate = Gate {
    quantity:
        "layout conversion kernel time, % of the step (where it is at least 5% of convolution time)",
    threshold: 1.0,
};
/// With no GPU, the host's conversion ops, from the same shares (of the host's convolution
/// time, of the step).
const GATE_HOST: Gate = Gate {
    quantity: "host time of layout conversion ops, % of the step (CPU-only trace; where it is at least 5% of convolution host time)",
    threshold: GATE.threshold,
};
/// How a finding's time is counted.
const COST: &str = "time of the layout conversion kernels per steady-state step: a model and inputs in channels_last end to end need none";
const COST_HOST: &str = "host time of the layout conversion ops per steady-state step: a model and inputs in one layout end to end need none";
/// How an op's `Concrete Inputs` end when its last one is the `MemoryFormat`
/// `torch.channels_last` (2) or `channels_last_3d` (3).
const TO_CHANNELS_LAST: [&str; 2] = ["\"2\"]", "\"3\"]"];

const FIX_LAYOUT_TRANSFORMS: Fix = Fix {
    summary: "Keep activations in channels_last end to end: convert the model and the input batch once (in the data pipeline), not per layer.",
    snippet: "model = model.to(memory_format=torch.channels_last)\nx = x.to(device, memory_format=torch.channels_last, non_blocking=True)",
    terms: &["channels_last"],
};

const LAYOUT_TRANSFORMS_ABOUT: About = About {
    id: "layout-transforms",
    title: "Tensors converted between NCHW and NHWC around convolutions",
    rule: "layout conversion kernels (cuDNN nchwToNhwc/nhwcToNchw, MIOpen batched_transpose, transpose_NCHW2CNHW) at least 5% of convolution kernel time and {0}% of the step, in at least half of the steady steps; on a CPU-only trace, the host's conversion ops (aten::to_mkldnn, aten::to_dense, aten::contiguous to channels_last) against its convolution ops",
    gates: &[GATE, GATE_HOST],
    fixes: std::slice::from_ref(&FIX_LAYOUT_TRANSFORMS),
};

impl Detector for LayoutTransforms {
    fn about(&self) -> &'static About {
        &LAYOUT_TRANSFORMS_ABOUT
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        if a.cpu_only {
            return self.detect_on_host(a, ledger);
        }
        let t = a.trace;
        let e = &t.events;
        let mut names = KernelNames::default();
        let mut shown: Vec<usize> = Vec::new();
        let checks = a
            .steady
            .iter()
            .map(|&k| {
                let (mut layout, mut conv, mut iv) = (0i64, 0i64, Vec::new());
                for i in a.gpu_work(k) {
                    if e.kind[i] != EventKind::GpuKernel {
                        continue;
                    }
                    let traits = names.of_event(t, i);
                    if traits.layout {
                        layout += e.dur[i];
                        iv.push((e.start[i], e.end(i)));
                        shown.push(i);
                    } else if traits.convolution {
                        conv += e.dur[i];
                    }
                }
                StepCheck {
                    step: k,
                    value: if conv > 0 && layout as f64 >= SHARE_OF_CONV * conv as f64 {
                        a.pct_of_step(k, layout)
                    } else {
                        0.0
                    },
                    claims: vec![(iv, 1.0)],
                }
            })
            .collect();
        let o = judge(self, a, ledger, GATE, checks, COST)?;
        conversions_found(a, o, shown, ("kernels", ""))
    }
}

impl LayoutTransforms {
    /// A CPU-only trace: the conversion ops' host time against the convolution ops' in each
    /// steady step.
    fn detect_on_host(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let t = a.trace;
        let e = &t.events;
        let is_op = |i: usize| e.kind[i] == EventKind::CpuOp;
        let checks = interval_checks(a, |k| {
            // The step's conversion and convolution ops (starting in it, cut at its end).
            let (lo, hi) = a.range(k);
            let (mut layout, mut conv) = (Vec::new(), Vec::new());
            for track in (0..t.tracks.len()).filter(|&tr| !t.tracks[tr].gpu) {
                for i in in_range(t, track, lo, hi).filter(|&i| e.start[i] >= lo && is_op(i)) {
                    let span = (e.start[i], e.end(i).min(hi));
                    if converts_layout(t, i) {
                        layout.push(span);
                    } else if t.name_of(i).contains("conv") {
                        conv.push(span);
                    }
                }
            }
            let (layout, conv) = (merge(layout), total(&merge(conv)));
            let applies = conv > 0 && total(&layout) as f64 >= SHARE_OF_CONV * conv as f64;
            (layout, applies)
        });
        let o = judge(self, a, ledger, GATE_HOST, checks, COST_HOST)?;
        let shown = o.events_where(a, |i| is_op(i) && converts_layout(t, i));
        conversions_found(a, o, shown, ("ops", " of host time"))
    }
}

/// The finding where the gate held, from the conversions `shown` (`of.0`: kernels or host ops,
/// whose time is `of.1`).
fn conversions_found(a: &Analysis<'_>, o: Judged, shown: Vec<usize>, of: (&str, &str)) -> Verdict {
    let (unit, time) = of;
    let summary = format!(
        "{:.1} layout conversions per step take {:.2} ms{time} ({:.1}% of the step)",
        a.per_step(shown.len() as f64),
        o.impact.ms_per_step,
        o.impact.pct_of_step
    );
    let evidence = vec![Evidence {
        what: format!("the longest layout conversion {unit}"),
        steps: o.held.clone(),
        events: a.longest_refs(&shown, 3),
        count: Some(shown.len() as u64),
        sources: shown,
    }];
    finding(
        &LayoutTransforms,
        o,
        summary,
        evidence,
        FIX_LAYOUT_TRANSFORMS,
    )
}

/// Whether host op `i` converts a tensor's layout: to or from MKL-DNN's blocked layout, or to
/// channels_last (`contiguous` keeps its memory format in `Concrete Inputs`).
fn converts_layout(t: &Trace, i: usize) -> bool {
    match t.name_of(i) {
        "aten::to_mkldnn" | "aten::to_dense" | "aten::_to_dense" => true,
        "aten::contiguous" => {
            let d = t.events.detail[i];
            d != NONE
                && t.details.op(d).concrete_inputs.is_some_and(|s| {
                    let text = t.strings.get(s);
                    TO_CHANNELS_LAST.iter().any(|end| text.ends_with(end))
                })
        }
        _ => false,
    }
}
