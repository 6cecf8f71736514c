//! Fusion candidates: runs of short element-wise kernels back to back on one stream, as eager
//! PyTorch launches them. A compiler's kernels (Triton's `triton_poi_…`) are already fused: what
//! the compiler left apart, the fix (torch.compile) does not join.

use super::{
    finding, judge, pct, About, Analysis, Detector, Evidence, Fix, Gate, StepCheck, Verdict,
};
use crate::attribution::Ledger;
use crate::model::kernels::is_elementwise;
use crate::model::EventKind;

pub(crate) struct FusionCandidates;

/// Element-wise kernels shorter than this are fusion candidates…
const SHORT_NS: i64 = 20_000;
/// …when at least this many run back to back…
const RUN: usize = 4;
/// …with gaps no longer than this…
const GAP_NS: i64 = 10_000;
/// …and the runs take this share of the step.
const GATE: Gate = Gate {
    quantity: "time of chains of 4+ element-wise kernels under 20 µs, at most 10 µs apart on one stream, % of the step",
    threshold: 5.0,
};
/// How a finding's time is counted.
const COST: &str = "per chain, its span less its longest kernel (the other kernels and the gaps), per steady-state step: what one fused kernel would not spend";

const FIX_FUSION_CANDIDATES: Fix = Fix {
    summary: "Let torch.compile fuse element-wise chains (activation, bias, residual adds, normalisation) into single kernels.",
    snippet: "model = torch.compile(model)",
};

const FUSION_CANDIDATES_ABOUT: About = About {
    id: "fusion-candidates",
    title: "Chains of short element-wise kernels that could be fused",
    threshold: "runs of 4 or more eager (not compiler-generated) element-wise kernels under 20 µs each, at most 10 µs apart on one stream, taking at least 5% of the step, in at least half of the steady steps",
    fixes: std::slice::from_ref(&FIX_FUSION_CANDIDATES),
};

impl Detector for FusionCandidates {
    fn about(&self) -> &'static About {
        &FUSION_CANDIDATES_ABOUT
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        let t = a.trace;
        let e = &t.events;
        let mut names: Vec<usize> = Vec::new();
        let mut runs_total = 0u64;
        let checks = a
            .steady
            .iter()
            .map(|&k| {
                let (mut run_ns, mut claims) = (0i64, Vec::new());
                let mut run: Vec<usize> = Vec::new();
                let mut close = |run: &mut Vec<usize>| {
                    if run.len() >= RUN {
                        runs_total += 1;
                        let kernel_ns: i64 = run.iter().map(|&i| e.dur[i]).sum();
                        let longest = run.iter().map(|&i| e.dur[i]).max().unwrap_or(0);
                        let span = (e.start[run[0]], e.end(run[run.len() - 1]));
                        run_ns += kernel_ns;
                        // One fused kernel still does the longest kernel's work; the rest of
                        // the chain's span (other kernels and the gaps) goes.
                        let saved =
                            (span.1 - span.0 - longest) as f64 / (span.1 - span.0).max(1) as f64;
                        claims.push((vec![span], saved));
                        if names.len() < 3 && !names.iter().any(|&n| e.name[n] == e.name[run[0]]) {
                            names.push(run[0]);
                        }
                    }
                    run.clear();
                };
                for i in a.gpu_work(k) {
                    let candidate = e.kind[i] == EventKind::GpuKernel
                        && e.dur[i] < SHORT_NS
                        && is_elementwise(t.name_of(i))
                        && !t.name_of(i).starts_with("triton_");
                    let breaks = run.last().is_some_and(|&p| {
                        e.track[p] != e.track[i] || e.start[i] - e.end(p) > GAP_NS
                    });
                    if !candidate || breaks {
                        close(&mut run);
                    }
                    if candidate {
                        run.push(i);
                    }
                }
                close(&mut run);
                let (start, end) = a.range(k);
                StepCheck {
                    step: k,
                    value: pct(run_ns as f64, (end - start) as f64),
                    claims,
                }
            })
            .collect();
        let o = judge(self, a, ledger, GATE, checks, COST)?;
        let summary = format!(
            "{:.0} chains of short element-wise kernels per step take a median {:.1}% of the step; fusing them saves about {:.2} ms per step",
            runs_total as f64 / a.steady.len().max(1) as f64,
            o.gate.median,
            o.impact.ms_per_step
        );
        let evidence = vec![Evidence {
            what: "the first kernel of some chains".into(),
            steps: o.held.clone(),
            events: names.iter().map(|&i| a.event_ref(i)).collect(),
            count: Some(runs_total),
            sources: names,
        }];
        finding(self, o, summary, evidence, FIX_FUSION_CANDIDATES)
    }
}
