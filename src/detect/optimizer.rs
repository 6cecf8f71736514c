//! Optimizer steps that are not fused, and `zero_grad` that writes zeros.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};
use crate::model::{EventKind, NONE};
use crate::window::Phase;

pub struct UnfusedOptimizer;
pub struct ZeroGradMemset;

/// Kernels per optimizer step from which a non-foreach, non-fused optimizer shows.
const KERNELS: f64 = 50.0;

/// Time of the steady-state optimizer windows, the GPU time of the kernels launched in them (not
/// of earlier work still running), the number of those kernels, and whether any foreach or
/// fused op ran in them.
fn optimizer_windows(a: &Analysis<'_>) -> (f64, f64, f64, bool) {
    let t = a.trace;
    let e = &t.events;
    let mut fused_ops: Vec<i64> = (0..e.len())
        .filter(|&i| {
            e.kind[i] == EventKind::CpuOp
                && (t.name_of(i).contains("_foreach_") || t.name_of(i).contains("_fused_"))
        })
        .map(|i| e.start[i])
        .collect();
    fused_ops.sort_unstable();
    // Kernels by the start of the CPU call that launched them.
    let mut launched: Vec<(i64, i64)> = t
        .launches
        .iter()
        .filter(|l| e.kind[l.gpu as usize] == EventKind::GpuKernel)
        .map(|l| (e.start[l.launch as usize], e.dur[l.gpu as usize]))
        .collect();
    launched.sort_unstable();
    let (mut dur, mut busy, mut kernels, mut fused) = (0i64, 0i64, 0u64, false);
    for w in a
        .steps
        .windows()
        .filter(|w| w.phase == Phase::Optimizer && a.steady.contains(&w.step))
    {
        if w.label.as_deref().is_some_and(|l| l.contains("zero_grad")) {
            continue;
        }
        let from = launched.partition_point(|l| l.0 < w.start);
        let to = launched.partition_point(|l| l.0 < w.end);
        dur += w.end - w.start;
        busy += launched[from..to].iter().map(|l| l.1).sum::<i64>();
        kernels += (to - from) as u64;
        fused |=
            fused_ops.partition_point(|&s| s < w.end) > fused_ops.partition_point(|&s| s < w.start);
    }
    let n = a.steady.len().max(1) as f64;
    (dur as f64 / n, busy as f64 / n, kernels as f64 / n, fused)
}

const UNFUSED_OPTIMIZER_FIX: Fix = Fix {
    summary: "Use the fused (or foreach) implementation of the optimizer.",
    snippet:
        "optimizer = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)  # or foreach=True",
};

impl Detector for UnfusedOptimizer {
    fn fixes(&self) -> &'static [Fix] {
        &[UNFUSED_OPTIMIZER_FIX]
    }

    fn id(&self) -> &'static str {
        "optimizer-not-fused"
    }

    fn title(&self) -> &'static str {
        "The optimizer updates parameters one tensor at a time"
    }

    fn threshold(&self) -> &'static str {
        "an Optimizer.step window with at least 50 kernels per step and no _foreach_ or _fused_ op in it"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let (dur, busy, kernels, fused) = optimizer_windows(a);
        if fused || kernels < KERNELS {
            return None;
        }
        let impact = a.impact(
            (dur - busy).max(0.0),
            "optimizer window time minus the GPU time of the kernels it launched, per steady-state step: the launch overhead that a fused optimizer removes",
        );
        Some(finding(
            self,
            format!("the optimizer step launches {kernels:.0} kernels and takes {:.2} ms; its kernels run {:.2} ms", dur / 1e6, busy / 1e6),
            impact,
            0.7,
            vec![Evidence { what: "optimizer kernels per step".into(), steps: a.steady_numbers(), events: vec!["Optimizer.step".into()], count: Some(kernels.round() as u64) }],
            UNFUSED_OPTIMIZER_FIX,
        ))
    }
}

const ZERO_GRAD_MEMSET_FIX: Fix = Fix {
    summary: "Drop the gradients instead of zeroing them (the default since PyTorch 2.0).",
    snippet: "optimizer.zero_grad(set_to_none=True)",
};

impl Detector for ZeroGradMemset {
    fn fixes(&self) -> &'static [Fix] {
        &[ZERO_GRAD_MEMSET_FIX]
    }

    fn id(&self) -> &'static str {
        "zero-grad-memset"
    }

    fn title(&self) -> &'static str {
        "zero_grad writes zeros instead of dropping gradients"
    }

    fn threshold(&self) -> &'static str {
        "an Optimizer.zero_grad range that launches GPU work (fill/zero kernels) in steady-state steps"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let t = a.trace;
        let e = &t.events;
        let mut launches = 0u64;
        let mut gpu_ns = 0i64;
        for l in &t.launches {
            let mut p = l.launch;
            while p != NONE {
                if t.name_of(p as usize).starts_with("Optimizer.zero_grad") {
                    if a.steady_step_at(e.start[p as usize]).is_some() {
                        launches += 1;
                        gpu_ns += e.dur[l.gpu as usize];
                    }
                    break;
                }
                p = e.parent[p as usize];
            }
        }
        if launches == 0 {
            return None;
        }
        let steps = a.steady.len().max(1) as f64;
        let impact = a.impact(
            gpu_ns as f64 / steps,
            "GPU time of the kernels launched by zero_grad per steady-state step",
        );
        Some(finding(
            self,
            format!(
                "zero_grad launches {:.0} kernels per step ({:.3} ms of GPU time) to write zeros",
                launches as f64 / steps,
                gpu_ns as f64 / steps / 1e6
            ),
            impact,
            0.9,
            vec![Evidence {
                what: "kernels launched under Optimizer.zero_grad".into(),
                steps: a.steady_numbers(),
                events: vec!["Optimizer.zero_grad".into()],
                count: Some(launches),
            }],
            ZERO_GRAD_MEMSET_FIX,
        ))
    }
}
