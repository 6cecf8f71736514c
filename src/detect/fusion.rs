//! Fusion candidates: runs of short element-wise kernels back to back on one stream, as eager
//! PyTorch launches them. Back to back means the GPU ran them with no gap to speak of, or the
//! host launched them one op after the other: in eager mode each op's dispatch leaves the GPU
//! waiting between kernels, and that wait is the chain's cost too (the cause; launch-bound, the
//! symptom, claims what is left). A compiler's kernels (Triton's `triton_poi_…`) are already
//! fused: what the compiler left apart, the fix (torch.compile) does not join.

use super::contract::{
    finding, judge, pct, About, Detector, Evidence, Fix, Gate, StepCheck, Verdict,
};
use crate::analysis::Analysis;
use crate::attribution::Ledger;
use crate::model::kernels::is_elementwise;
use crate::model::EventKind;

pub(crate) struct FusionCandidates;

/// Element-wise kernels shorter than this are fusion candidates…
const SHORT_NS: i64 = 20_000;
/// …when at least this many run back to back…
const RUN: usize = 4;
/// …with gaps no longer than this on the GPU…
const GAP_NS: i64 = 10_000;
/// …or launched by one op, or by ops the host ran one after the other (at most this apart),
const HOST_GAP_NS: i64 = 50_000;
/// with a GPU gap under this (a longer one is the host busy elsewhere: low utilization)…
const MAX_GAP_NS: i64 = 1_000_000;
/// …and the runs' kernels take this share of the step's kernel time.
const GATE: Gate = Gate {
    quantity: "kernel time of chains of 4+ element-wise kernels under 20 µs launched back to back on one stream, % of the step's kernel time",
    threshold: 10.0,
};
/// How a finding's time is counted.
const COST: &str = "per chain, its span less its longest kernel (the other kernels and the gaps), per steady-state step: what one fused kernel would not spend";

const FIX_FUSION_CANDIDATES: Fix = Fix {
    summary: "Let torch.compile fuse element-wise chains (activation, bias, residual adds, normalisation) into single kernels.",
    snippet: "model = torch.compile(model)",
    terms: &["torch.compile", "fuse"],
};

const FUSION_CANDIDATES_ABOUT: About = About {
    id: "fusion-candidates",
    title: "Chains of short element-wise kernels that could be fused",
    rule: "runs of 4 or more eager (not compiler-generated) element-wise kernels under 20 µs each, back to back on one stream (at most 10 µs apart, or launched by one op or by ops the host ran at most 50 µs apart, with a GPU gap under 1 ms), at least {0}% of the step's kernel time, in at least half of the steady steps",
    gates: &[GATE],
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
                let (mut run_ns, mut kernel_ns, mut claims) = (0i64, 0i64, Vec::new());
                let mut run: Vec<usize> = Vec::new();
                let mut close = |run: &mut Vec<usize>| {
                    if run.len() >= RUN {
                        runs_total += 1;
                        let chain_ns: i64 = run.iter().map(|&i| e.dur[i]).sum();
                        let longest = run.iter().map(|&i| e.dur[i]).max().unwrap_or(0);
                        let span = (e.start[run[0]], e.end(run[run.len() - 1]));
                        run_ns += chain_ns;
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
                    if matches!(e.kind[i], EventKind::GpuKernel | EventKind::Collective) {
                        kernel_ns += e.dur[i];
                    }
                    let candidate = e.kind[i] == EventKind::GpuKernel && e.dur[i] < SHORT_NS && {
                        let name = t.name_of(i);
                        is_elementwise(name) && !name.starts_with("triton_")
                    };
                    let breaks = run.last().is_some_and(|&p| !back_to_back(a, p, i));
                    if !candidate || breaks {
                        close(&mut run);
                    }
                    if candidate {
                        run.push(i);
                    }
                }
                close(&mut run);
                StepCheck {
                    step: k,
                    value: pct(run_ns as f64, kernel_ns as f64),
                    claims,
                }
            })
            .collect();
        let o = judge(self, a, ledger, GATE, checks, COST)?;
        let summary = format!(
            "{:.0} chains of short element-wise kernels per step take a median {:.1}% of the step's kernel time; fusing them saves about {:.2} ms per step",
            a.per_step(runs_total as f64),
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

/// Whether kernel `i` follows kernel `p` in one chain: on the same stream, and either at most
/// [`GAP_NS`] after it, or launched by the same outermost op or by the op the host ran next
/// (at most [`HOST_GAP_NS`] after `p`'s), with a GPU gap under [`MAX_GAP_NS`].
fn back_to_back(a: &Analysis<'_>, p: usize, i: usize) -> bool {
    let t = a.trace;
    let e = &t.events;
    let gap = e.start[i] - e.end(p);
    if e.track[p] != e.track[i] || gap >= MAX_GAP_NS {
        return false;
    }
    let op = |kernel: usize| {
        t.launch_of(kernel as u32)
            .and_then(|l| t.outermost_op(l as usize))
    };
    gap <= GAP_NS
        || match (op(p), op(i)) {
            (Some(x), Some(y)) => {
                x == y
                    || (e.track[x] == e.track[y]
                        && e.start[y] >= e.end(x)
                        && e.start[y] - e.end(x) <= HOST_GAP_NS)
            }
            _ => false,
        }
}
