//! Layout transforms: NCHW↔NHWC conversion kernels around convolutions.

use super::contract::{finding, judge, About, Detector, Evidence, Fix, Gate, StepCheck, Verdict};
use crate::analysis::Analysis;
use crate::attribution::Ledger;
use crate::model::kernels::KernelNames;
use crate::model::EventKind;

pub(crate) struct LayoutTransforms;

/// Layout kernels from this share of convolution time…
const SHARE_OF_CONV: f64 = 0.05;
/// …and this share of the step.
const GATE: Gate = Gate {
    quantity:
        "layout conversion kernel time, % of the step (where it is at least 5% of convolution time)",
    threshold: 1.0,
};
/// How a finding's time is counted.
const COST: &str = "time of the layout conversion kernels per steady-state step: a model and inputs in channels_last end to end need none";

const FIX_LAYOUT_TRANSFORMS: Fix = Fix {
    summary: "Keep activations in channels_last end to end: convert the model and the input batch once (in the data pipeline), not per layer.",
    snippet: "model = model.to(memory_format=torch.channels_last)\nx = x.to(device, memory_format=torch.channels_last, non_blocking=True)",
    terms: &["channels_last"],
};

const LAYOUT_TRANSFORMS_ABOUT: About = About {
    id: "layout-transforms",
    title: "Tensors converted between NCHW and NHWC around convolutions",
    rule: "layout conversion kernels (cuDNN nchwToNhwc/nhwcToNchw, MIOpen batched_transpose, transpose_NCHW2CNHW) at least 5% of convolution kernel time and {0}% of the step, in at least half of the steady steps",
    gates: &[GATE],
    fixes: std::slice::from_ref(&FIX_LAYOUT_TRANSFORMS),
};

impl Detector for LayoutTransforms {
    fn about(&self) -> &'static About {
        &LAYOUT_TRANSFORMS_ABOUT
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
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
        let count = shown.len();
        let summary = format!(
            "{:.1} layout conversions per step take {:.2} ms ({:.1}% of the step)",
            a.per_step(count as f64),
            o.impact.ms_per_step,
            o.impact.pct_of_step
        );
        let evidence = vec![Evidence {
            what: "the longest layout conversion kernels".into(),
            steps: o.held.clone(),
            events: a.longest_refs(&shown, 3),
            count: Some(count as u64),
            sources: shown,
        }];
        finding(self, o, summary, evidence, FIX_LAYOUT_TRANSFORMS)
    }
}
