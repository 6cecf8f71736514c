//! Optimizer steps that are not fused, and `zero_grad` that writes zeros: causes, charged what
//! they cost where they run. With a GPU: the GPU idle inside their ranges (the host launching
//! one tensor at a time) and the GPU time of the work they launch; on a CPU-only trace, the host
//! time of the per-tensor work (`Analysis::cpu_only`).

use super::contract::{finding, judge, About, Detector, Evidence, Fix, Gate, StepCheck, Verdict};
use crate::analysis::Analysis;
use crate::attribution::Ledger;
use crate::metrics::merge;
use crate::model::{EventKind, Trace, NONE};

pub(crate) struct UnfusedOptimizer;
pub(crate) struct ZeroGradMemset;

const UNFUSED: Gate = Gate {
    quantity: "kernels launched per Optimizer.step with no _foreach_ or _fused_ op",
    threshold: 50.0,
};
/// The same count on the host: a per-parameter update runs a handful of ops per tensor.
const UNFUSED_HOST: Gate = Gate {
    quantity:
        "outermost ATen ops run per Optimizer.step with no _foreach_ or _fused_ op (CPU-only trace)",
    threshold: 50.0,
};
const ZERO_GRAD: Gate = Gate {
    quantity: "kernels launched under Optimizer.zero_grad per step",
    threshold: 1.0,
};
const ZERO_GRAD_HOST: Gate = Gate {
    quantity:
        "aten::zero_ or aten::fill_ ops run under Optimizer.zero_grad per step (CPU-only trace)",
    threshold: 1.0,
};

/// The share of the single-tensor optimizer's own work (its kernels' GPU time; on a CPU-only
/// trace, its host time) that fusing saves: the same arithmetic remains, the per-tensor dispatch,
/// launches and small-kernel tails go.
const FUSED_SAVES: f64 = 0.5;

const STEP: &str = "Optimizer.step";
const ZERO: &str = "Optimizer.zero_grad";

const FIX_UNFUSED_OPTIMIZER: Fix = Fix {
    summary: "Use the fused (or foreach) implementation of the optimizer.",
    snippet:
        "optimizer = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)  # or foreach=True",
    terms: &["fused=True", "foreach"],
};

const FIX_ZERO_GRAD_MEMSET: Fix = Fix {
    summary: "Drop the gradients instead of zeroing them (the default since PyTorch 2.0).",
    snippet: "optimizer.zero_grad(set_to_none=True)",
    terms: &["set_to_none"],
};

/// The `prefix` ranges (`Optimizer.step#SGD.step`, `Optimizer.zero_grad#…`: every era names
/// them so, as `cpu_op` or `user_annotation`) and what ran under them, per step.
struct Ranges {
    /// The ranges, by step index (steady steps only).
    events: Vec<Vec<usize>>,
    /// The outermost ATen ops inside each step's ranges (Python frames in between skipped).
    ops: Vec<Vec<usize>>,
    /// GPU work launched from inside the ranges, by the step its range starts in.
    launched: Vec<Vec<usize>>,
    /// Whether a `_foreach_` or `_fused_` op runs inside the step's ranges.
    fused: Vec<bool>,
}

impl Ranges {
    fn of(a: &Analysis<'_>, prefix: &str) -> Ranges {
        let t = a.trace;
        let e = &t.events;
        let n = a.steps.steps.len();
        let mut r = Ranges {
            events: vec![Vec::new(); n],
            ops: vec![Vec::new(); n],
            launched: vec![Vec::new(); n],
            fused: vec![false; n],
        };
        for track in t.tracks.iter().filter(|tr| !tr.gpu) {
            for i in track.events.clone().map(|i| i as usize) {
                if !is_range(t, i, prefix) {
                    continue;
                }
                let Some(k) = step_of(a, i) else {
                    continue;
                };
                r.events[k].push(i);
                // `Optimizer.step#FusedAdam.step`: apex's and torchrec's fused optimizers.
                r.fused[k] |= t.name_of(i).contains("#Fused");
                for j in t.nested_in(i) {
                    let name = t.name_of(j);
                    r.fused[k] |= name.contains("_foreach_") || name.contains("_fused_");
                    if e.kind[j] == EventKind::CpuOp && holder(t, j) == Some(i) {
                        r.ops[k].push(j);
                    }
                }
            }
        }
        for l in &t.launches {
            let mut p = l.launch;
            while p != NONE {
                if is_range(t, p as usize, prefix) {
                    if let Some(k) = step_of(a, p as usize) {
                        r.launched[k].push(l.gpu as usize);
                    }
                    break;
                }
                p = e.parent[p as usize];
            }
        }
        r
    }

    /// Step `k`'s ranges as intervals.
    fn intervals(&self, t: &Trace, k: usize) -> Vec<(i64, i64)> {
        let e = &t.events;
        merge(
            self.events[k]
                .iter()
                .map(|&i| (e.start[i], e.end(i)))
                .collect(),
        )
    }

    /// Every range of the steady steps, for evidence.
    fn all(&self) -> Vec<usize> {
        self.events.iter().flatten().copied().collect()
    }
}

/// The steady step of range `i`: the one it starts in, else the first one it overlaps (a
/// capture without steps is one step from the first launch, which may sit inside the range).
fn step_of(a: &Analysis<'_>, i: usize) -> Option<usize> {
    let e = &a.trace.events;
    a.steady_step_at(e.start[i]).or_else(|| {
        a.steady.iter().copied().find(|&k| {
            let (start, end) = a.range(k);
            start < e.end(i) && e.start[i] < end
        })
    })
}

/// Whether event `i` is a `prefix` range.
fn is_range(t: &Trace, i: usize, prefix: &str) -> bool {
    matches!(
        t.events.kind[i],
        EventKind::CpuOp | EventKind::UserAnnotation
    ) && t.name_of(i).starts_with(prefix)
}

/// The op or range that holds event `j`: its nearest ancestor that is not a Python frame.
fn holder(t: &Trace, j: usize) -> Option<usize> {
    let e = &t.events;
    let mut p = e.parent[j];
    while p != NONE && e.kind[p as usize] == EventKind::PythonFunction {
        p = e.parent[p as usize];
    }
    (p != NONE).then_some(p as usize)
}

/// The GPU intervals of `work`.
fn gpu_intervals(t: &Trace, work: &[usize]) -> Vec<(i64, i64)> {
    let e = &t.events;
    merge(work.iter().map(|&g| (e.start[g], e.end(g))).collect())
}

const UNFUSED_OPTIMIZER_ABOUT: About = About {
    id: "optimizer-not-fused",
    title: "The optimizer updates parameters one tensor at a time",
    rule: "Optimizer.step ranges launching at least {0} kernels per step (on a CPU-only trace: running at least {1} ATen ops) with no _foreach_ or _fused_ op in them, in at least half of the steady steps",
    gates: &[UNFUSED, UNFUSED_HOST],
    fixes: std::slice::from_ref(&FIX_UNFUSED_OPTIMIZER),
};

impl Detector for UnfusedOptimizer {
    fn about(&self) -> &'static About {
        &UNFUSED_OPTIMIZER_ABOUT
    }

    fn training_only(&self) -> bool {
        true
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let t = a.trace;
        let e = &t.events;
        let r = Ranges::of(a, STEP);
        let checks = a
            .steady
            .iter()
            .map(|&k| {
                let ranges = r.intervals(t, k);
                let kernels: Vec<usize> = r.launched[k]
                    .iter()
                    .copied()
                    .filter(|&g| e.kind[g] == EventKind::GpuKernel)
                    .collect();
                let (count, claims) = if a.cpu_only {
                    (r.ops[k].len(), vec![(ranges, FUSED_SAVES)])
                } else {
                    let own = gpu_intervals(t, &kernels);
                    // Where the host is ahead its kernels run later, launch gaps between them:
                    // the GPU idle from its first kernel to its last is the optimizer's too.
                    let span = own.first().zip(own.last()).map(|(f, l)| (f.0, l.1));
                    let idle = a.idle_in(k, &merge(ranges.into_iter().chain(span).collect()));
                    (kernels.len(), vec![(idle, 1.0), (own, FUSED_SAVES)])
                };
                StepCheck {
                    step: k,
                    value: if r.fused[k] { 0.0 } else { count as f64 },
                    claims,
                }
            })
            .collect();
        let (gate, method, unit) = if a.cpu_only {
            (
                UNFUSED_HOST,
                "half the host time inside Optimizer.step per steady-state step: a fused optimizer does the same arithmetic without dispatching ops tensor by tensor",
                "ATen ops",
            )
        } else {
            (
                UNFUSED,
                "GPU idle inside Optimizer.step and between its kernels, plus half the GPU time of those kernels, per steady-state step, not already claimed: the launches and small kernels a fused optimizer removes",
                "kernels",
            )
        };
        let o = judge(self, a, ledger, gate, checks, method)?;
        let summary = format!(
            "the optimizer step runs a median {:.0} {unit} per step, one tensor at a time; fusing it saves about {:.2} ms per step ({:.1}% of the step)",
            o.gate.median, o.impact.ms_per_step, o.impact.pct_of_step
        );
        let ranges = r.all();
        let evidence = vec![Evidence {
            what: format!("{unit} run under Optimizer.step, one tensor at a time"),
            steps: o.held.clone(),
            events: a.longest_refs(&ranges, 3),
            count: Some(o.gate.median.round() as u64),
            sources: ranges,
        }];
        finding(self, o, summary, evidence, FIX_UNFUSED_OPTIMIZER)
    }
}

const ZERO_GRAD_MEMSET_ABOUT: About = About {
    id: "zero-grad-memset",
    title: "zero_grad writes zeros instead of dropping gradients",
    rule: "an Optimizer.zero_grad range that launches GPU work (at least {0} fill/zero kernel; on a CPU-only trace: runs at least {1} aten::zero_ or aten::fill_) in at least half of the steady steps, costing at least 0.5% of the step",
    gates: &[ZERO_GRAD, ZERO_GRAD_HOST],
    fixes: std::slice::from_ref(&FIX_ZERO_GRAD_MEMSET),
};

impl Detector for ZeroGradMemset {
    fn about(&self) -> &'static About {
        &ZERO_GRAD_MEMSET_ABOUT
    }

    fn training_only(&self) -> bool {
        true
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let t = a.trace;
        let e = &t.events;
        let r = Ranges::of(a, ZERO);
        let zeroing = |k: usize| -> Vec<usize> {
            r.ops[k]
                .iter()
                .copied()
                .filter(|&j| matches!(t.name_of(j), "aten::zero_" | "aten::fill_"))
                .collect()
        };
        let mut count = 0;
        let checks = a
            .steady
            .iter()
            .map(|&k| {
                let (work, claims) = if a.cpu_only {
                    let ops = zeroing(k);
                    let host = merge(ops.iter().map(|&j| (e.start[j], e.end(j))).collect());
                    (ops.len(), vec![(host, 1.0)])
                } else {
                    let idle = a.idle_in(k, &r.intervals(t, k));
                    let own = gpu_intervals(t, &r.launched[k]);
                    (r.launched[k].len(), vec![(own, 1.0), (idle, 1.0)])
                };
                count += work;
                StepCheck {
                    step: k,
                    value: work as f64,
                    claims,
                }
            })
            .collect();
        let (gate, method, what) = if a.cpu_only {
            (
                ZERO_GRAD_HOST,
                "host time of the aten::zero_/fill_ ops under zero_grad per steady-state step",
                "zero_/fill_ ops",
            )
        } else {
            (
                ZERO_GRAD,
                "GPU time of the work launched by zero_grad, plus the GPU idle inside zero_grad while the host launches it, per steady-state step",
                "kernels",
            )
        };
        let o = judge(self, a, ledger, gate, checks, method)?;
        let ranges = r.all();
        let summary = format!(
            "zero_grad runs {:.0} {what} per step to write zeros; dropping the gradients saves {:.3} ms per step",
            a.per_step(count as f64),
            o.impact.ms_per_step
        );
        let evidence = vec![Evidence {
            what: format!("Optimizer.zero_grad ranges that run {what}"),
            steps: o.held.clone(),
            events: ranges.iter().take(3).map(|&i| a.event_ref(i)).collect(),
            count: Some(count as u64),
            sources: ranges,
        }];
        finding(self, o, summary, evidence, FIX_ZERO_GRAD_MEMSET)
    }
}
