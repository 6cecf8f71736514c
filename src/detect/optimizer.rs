//! Optimizer steps that are not fused, and `zero_grad` that writes zeros.

use super::{finding, judge, Analysis, Detector, Evidence, Fix, Gate, StepCheck, Verdict};
use crate::attribution::{intersect, Ledger, Part};
use crate::metrics::merge;
use crate::model::{EventKind, NONE};

pub struct UnfusedOptimizer;
pub struct ZeroGradMemset;

const UNFUSED: Gate = Gate {
    quantity: "kernels launched per Optimizer.step with no _foreach_ or _fused_ op",
    threshold: 50.0,
};
const ZERO_GRAD: Gate = Gate {
    quantity: "kernels launched under Optimizer.zero_grad per step",
    threshold: 1.0,
};

const FIX_UNFUSED_OPTIMIZER: Fix = Fix {
    summary: "Use the fused (or foreach) implementation of the optimizer.",
    snippet:
        "optimizer = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)  # or foreach=True",
};

const FIX_ZERO_GRAD_MEMSET: Fix = Fix {
    summary: "Drop the gradients instead of zeroing them (the default since PyTorch 2.0).",
    snippet: "optimizer.zero_grad(set_to_none=True)",
};

impl Detector for UnfusedOptimizer {
    fn id(&self) -> &'static str {
        "optimizer-not-fused"
    }

    fn title(&self) -> &'static str {
        "The optimizer updates parameters one tensor at a time"
    }

    fn threshold(&self) -> &'static str {
        "Optimizer.step ranges launching at least 50 kernels per step with no _foreach_ or _fused_ op in them, in at least half of the steady steps"
    }

    fn fixes(&self) -> &'static [Fix] {
        std::slice::from_ref(&FIX_UNFUSED_OPTIMIZER)
    }

    fn training_only(&self) -> bool {
        true
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let t = a.trace;
        let e = &t.events;
        let n = a.steps.steps.len();
        // Optimizer.step ranges by steady step, and whether a foreach or fused op runs in them.
        let mut ranges: Vec<Vec<(i64, i64)>> = vec![Vec::new(); n];
        let mut calls = Vec::new();
        let mut fused = vec![false; n];
        for track in t.tracks.iter().filter(|tr| !tr.gpu) {
            let last = track.events.end as usize;
            for i in track.events.clone().map(|i| i as usize) {
                if e.kind[i] != EventKind::CpuOp && e.kind[i] != EventKind::UserAnnotation
                    || !t.name_of(i).starts_with("Optimizer.step")
                {
                    continue;
                }
                let Some(k) = a.steady_step_at(e.start[i]) else {
                    continue;
                };
                ranges[k].push((e.start[i], e.end(i)));
                calls.push(i);
                fused[k] |= (i..last).take_while(|&j| e.start[j] < e.end(i)).any(|j| {
                    let name = t.name_of(j);
                    name.contains("_foreach_") || name.contains("_fused_")
                });
            }
        }
        // Kernels launched under those ranges.
        let mut kernels = vec![0u64; n];
        for l in &t.launches {
            if e.kind[l.gpu as usize] != EventKind::GpuKernel {
                continue;
            }
            let mut p = l.launch;
            while p != NONE {
                if t.name_of(p as usize).starts_with("Optimizer.step") {
                    if let Some(k) = a.steady_step_at(e.start[p as usize]) {
                        kernels[k] += 1;
                    }
                    break;
                }
                p = e.parent[p as usize];
            }
        }
        let checks = a
            .steady
            .iter()
            .map(|&k| {
                let idle = a.splits[k].intervals_of(&[
                    Part::IdleLaunch,
                    Part::IdleKernelWait,
                    Part::IdleOther,
                    Part::IdleHostOnly,
                ]);
                StepCheck {
                    step: k,
                    value: if fused[k] { 0.0 } else { kernels[k] as f64 },
                    claims: vec![(intersect(&idle, &merge(ranges[k].clone())), 1.0)],
                }
            })
            .collect();
        let o = match judge(
            self,
            a,
            ledger,
            UNFUSED,
            checks,
            "GPU idle inside Optimizer.step per steady-state step, not already claimed: the launch overhead that a fused optimizer removes",
        ) {
            Ok(o) => o,
            Err(rejected) => return rejected.into(),
        };
        let summary = format!(
            "the optimizer step launches a median {:.0} kernels per step, one tensor at a time; the GPU idles {:.2} ms per step in it",
            o.gate.median, o.impact.ms_per_step
        );
        let evidence = vec![Evidence {
            what: "kernels launched under Optimizer.step".into(),
            steps: o.held.clone(),
            events: vec!["Optimizer.step".into()],
            count: Some(o.gate.median.round() as u64),
            sources: calls
                .into_iter()
                .filter(|&i| o.holds_at(a, e.start[i]))
                .collect(),
        }];
        finding(self, o, summary, evidence, FIX_UNFUSED_OPTIMIZER)
    }
}

impl Detector for ZeroGradMemset {
    fn id(&self) -> &'static str {
        "zero-grad-memset"
    }

    fn title(&self) -> &'static str {
        "zero_grad writes zeros instead of dropping gradients"
    }

    fn threshold(&self) -> &'static str {
        "an Optimizer.zero_grad range that launches GPU work (fill/zero kernels) in at least half of the steady steps, costing at least 0.5% of the step"
    }

    fn fixes(&self) -> &'static [Fix] {
        std::slice::from_ref(&FIX_ZERO_GRAD_MEMSET)
    }

    fn training_only(&self) -> bool {
        true
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let t = a.trace;
        let e = &t.events;
        // GPU work launched under zero_grad, by steady step.
        let mut per_step: Vec<Vec<(i64, i64)>> = vec![Vec::new(); a.steps.steps.len()];
        let mut shown = Vec::new();
        for l in &t.launches {
            let mut p = l.launch;
            while p != NONE {
                if t.name_of(p as usize).starts_with("Optimizer.zero_grad") {
                    if let Some(k) = a.steady_step_at(e.start[p as usize]) {
                        let g = l.gpu as usize;
                        per_step[k].push((e.start[g], e.end(g)));
                        shown.push(p as usize);
                    }
                    break;
                }
                p = e.parent[p as usize];
            }
        }
        let launches: usize = per_step.iter().map(Vec::len).sum();
        let checks = a
            .steady
            .iter()
            .map(|&k| StepCheck {
                step: k,
                value: per_step[k].len() as f64,
                claims: vec![(std::mem::take(&mut per_step[k]), 1.0)],
            })
            .collect();
        let o = match judge(
            self,
            a,
            ledger,
            ZERO_GRAD,
            checks,
            "GPU time of the kernels launched by zero_grad per steady-state step",
        ) {
            Ok(o) => o,
            Err(rejected) => return rejected.into(),
        };
        shown.dedup();
        let summary = format!(
            "zero_grad launches {:.0} kernels per step ({:.3} ms of GPU time) to write zeros",
            launches as f64 / a.steady.len().max(1) as f64,
            o.impact.ms_per_step
        );
        let evidence = vec![Evidence {
            what: "Optimizer.zero_grad ranges that launch kernels".into(),
            steps: o.held.clone(),
            events: shown.iter().take(3).map(|&i| a.event_ref(i)).collect(),
            count: Some(launches as u64),
            sources: shown,
        }];
        finding(self, o, summary, evidence, FIX_ZERO_GRAD_MEMSET)
    }
}
