//! Layout transforms: NCHW↔NHWC conversion kernels around convolutions.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};
use crate::model::kernels::KernelNames;
use crate::model::EventKind;

pub struct LayoutTransforms;

/// Layout kernels from this share of convolution time…
const SHARE_OF_CONV: f64 = 0.05;
/// …and this share of the step.
const SHARE_OF_STEP: f64 = 0.01;

const LAYOUT_TRANSFORMS_FIX: Fix = Fix {
    summary: "Keep activations in channels_last end to end: convert the model and the input batch once (in the data pipeline), not per layer.",
    snippet: "model = model.to(memory_format=torch.channels_last)\nx = x.to(device, memory_format=torch.channels_last, non_blocking=True)",
};

impl Detector for LayoutTransforms {
    fn fixes(&self) -> &'static [Fix] {
        &[LAYOUT_TRANSFORMS_FIX]
    }

    fn id(&self) -> &'static str {
        "layout-transforms"
    }

    fn title(&self) -> &'static str {
        "Tensors converted between NCHW and NHWC around convolutions"
    }

    fn threshold(&self) -> &'static str {
        "layout conversion kernels (cuDNN nchwToNhwc/nhwcToNchw, MIOpen batched_transpose, transpose_NCHW2CNHW) above 5% of convolution kernel time and 1% of the step"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let t = a.trace;
        let e = &t.events;
        let (mut layout, mut conv, mut count) = (0i64, 0i64, 0u64);
        let mut names: Vec<String> = Vec::new();
        let mut kernel_names = KernelNames::default();
        for i in 0..e.len() {
            if e.kind[i] != EventKind::GpuKernel || a.steady_step_at(e.start[i]).is_none() {
                continue;
            }
            let traits = kernel_names.of_event(t, i);
            if traits.layout {
                layout += e.dur[i];
                count += 1;
                if names.len() < 5 && !names.iter().any(|n| n == t.name_of(i)) {
                    names.push(t.name_of(i).to_string());
                }
            } else if traits.convolution {
                conv += e.dur[i];
            }
        }
        let steps = a.steady.len().max(1) as f64;
        let per_step = layout as f64 / steps;
        if conv == 0
            || (layout as f64) < SHARE_OF_CONV * conv as f64
            || per_step < SHARE_OF_STEP * a.step_ns()
        {
            return None;
        }
        let impact = a.impact(per_step, "time of the layout conversion kernels per steady-state step: a model and inputs in channels_last end to end need none");
        Some(finding(
            self,
            format!(
                "{:.1} layout conversions per step take {:.2} ms, {:.0}% of the convolution time",
                count as f64 / steps,
                per_step / 1e6,
                100.0 * layout as f64 / conv as f64
            ),
            impact,
            0.7,
            vec![Evidence {
                what: "layout conversion kernels".into(),
                steps: a.steady_numbers(),
                events: names,
                count: Some(count),
            }],
            LAYOUT_TRANSFORMS_FIX,
        ))
    }
}
