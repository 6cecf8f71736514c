//! Fusion candidates: runs of short element-wise kernels back to back on one stream.

use super::{finding, Analysis, Detector, Evidence, Finding, Fix};
use crate::model::kernels::is_elementwise;
use crate::model::EventKind;

pub struct FusionCandidates;

/// Element-wise kernels shorter than this are fusion candidates…
const SHORT_NS: i64 = 20_000;
/// …when at least this many run back to back…
const RUN: usize = 4;
/// …with gaps no longer than this…
const GAP_NS: i64 = 10_000;
/// …and the runs take this share of the step.
const SHARE: f64 = 0.05;

const FUSION_CANDIDATES_FIX: Fix = Fix {
    summary: "Let torch.compile fuse element-wise chains (activation, bias, residual adds, normalisation) into single kernels.",
    snippet: "model = torch.compile(model)",
};

impl Detector for FusionCandidates {
    fn fixes(&self) -> &'static [Fix] {
        &[FUSION_CANDIDATES_FIX]
    }

    fn id(&self) -> &'static str {
        "fusion-candidates"
    }

    fn title(&self) -> &'static str {
        "Chains of short element-wise kernels that could be fused"
    }

    fn threshold(&self) -> &'static str {
        "runs of 4 or more element-wise kernels under 20 µs each, at most 10 µs apart on one stream, taking 5% of the step or more"
    }

    fn detect(&self, a: &Analysis<'_>) -> Option<Finding> {
        let t = a.trace;
        let e = &t.events;
        let (mut runs, mut run_ns, mut saved_ns) = (0u64, 0i64, 0i64);
        let mut names: Vec<String> = Vec::new();
        for track in t.tracks.iter().filter(|tr| tr.gpu) {
            let mut run: Vec<usize> = Vec::new();
            let mut close = |run: &mut Vec<usize>| {
                if run.len() >= RUN {
                    runs += 1;
                    let total: i64 = run.iter().map(|&i| e.dur[i]).sum();
                    let longest = run.iter().map(|&i| e.dur[i]).max().unwrap_or(0);
                    run_ns += total;
                    // One fused kernel still does the longest kernel's work; the rest, and the
                    // gaps, go.
                    saved_ns +=
                        total - longest + (e.end(run[run.len() - 1]) - e.start[run[0]] - total);
                    for &i in run.iter().take(3) {
                        if names.len() < 5 && !names.iter().any(|n| n == t.name_of(i)) {
                            names.push(t.name_of(i).to_string());
                        }
                    }
                }
                run.clear();
            };
            for i in track.events.clone().map(|i| i as usize) {
                let candidate = e.kind[i] == EventKind::GpuKernel
                    && e.dur[i] < SHORT_NS
                    && is_elementwise(t.name_of(i))
                    && a.steady_step_at(e.start[i]).is_some();
                if !candidate || run.last().is_some_and(|&p| e.start[i] - e.end(p) > GAP_NS) {
                    close(&mut run);
                }
                if candidate {
                    run.push(i);
                }
            }
            close(&mut run);
        }
        let steps = a.steady.len().max(1) as f64;
        if runs == 0 || (run_ns as f64 / steps) < SHARE * a.step_ns() {
            return None;
        }
        let impact = a.impact(
            saved_ns as f64 / steps,
            "per run, the time of all but its longest kernel plus the gaps between them, per steady-state step: what one fused kernel would not spend",
        );
        Some(finding(
            self,
            format!(
                "{:.0} chains of short element-wise kernels per step take {:.2} ms",
                runs as f64 / steps,
                run_ns as f64 / steps / 1e6
            ),
            impact,
            0.5,
            vec![Evidence {
                what: "element-wise kernel chains".into(),
                steps: a.steady_numbers(),
                events: names,
                count: Some(runs),
            }],
            FUSION_CANDIDATES_FIX,
        ))
    }
}
