//! Launch-bound: many tiny kernels whose launches the GPU waits on; and a note where the GPU
//! records start before the calls that launched them ([`ClockSkew`]): the clocks disagree, so no
//! launch-to-start time is measurable.

use super::contract::{
    finding, interval_checks, judge, pct, About, Detector, Evidence, Fix, Gate, Note, Observer,
    Verdict,
};
use super::utilization::{launch_limited, mid_step_gaps, SHORT_US};
use crate::analysis::Analysis;
use crate::attribution::Ledger;

pub struct LaunchBound;
pub(crate) struct ClockSkew;

/// A GPU record that starts this long before the call that launched it…
const LEAD_NS: i64 = 1_000;
/// …in at least this share of the launched records: the GPU's and the host's clocks disagree.
const SKEWED_SHARE: f64 = 0.1;

/// Mid-step idle from 10% of the step, in steps where most kernels are short (Holistic Trace
/// Analysis reports the same < 10 µs share in its kernel-launch statistics).
const GATE: Gate = Gate {
    quantity: "GPU idle in gaps under 1 ms between its first and last work of the step (not waiting for data, the allocator or a sync) when at least half of the kernels run under 10 µs or the median kernel is shorter than the host time per kernel of the ops launching them and short gaps are most of the mid-step idle, % of the step",
    threshold: 10.0,
};
/// How a finding's time is counted.
const COST: &str = "GPU idle between its first and last work of the step that no other finding explains, mean over steady-state steps: the launch overhead CUDA graphs or fusion remove";

const FIX_LAUNCH_BOUND: Fix = Fix {
    summary: "Launch fewer, larger kernels: capture the step in a CUDA graph, let torch.compile fuse element-wise chains, or raise the batch size.",
    snippet: "model = torch.compile(model, mode=\"reduce-overhead\")\n# or by hand: g = torch.cuda.CUDAGraph(); with torch.cuda.graph(g): out = model(static_input)",
    terms: &["CUDA graph", "torch.compile", "batch size", "reduce-overhead"],
};

const LAUNCH_BOUND_ABOUT: About = About {
    id: "launch-bound-small-kernels",
    title: "Launch-bound: many kernels shorter than their launch",
    rule: "at least 50% of the step's kernels shorter than 10 µs (or the median kernel shorter than the host time per kernel of the ops that launch them, with gaps under 1 ms most of the mid-step idle), and GPU idle in gaps under 1 ms between its first and last work (not waiting for data, the allocator or a sync) at least {0}% of the step, in at least half of the steady steps",
    gates: &[GATE],
    fixes: std::slice::from_ref(&FIX_LAUNCH_BOUND),
};

impl Detector for LaunchBound {
    fn about(&self) -> &'static About {
        &LAUNCH_BOUND_ABOUT
    }

    fn reads_decode(&self) -> bool {
        true
    }

    fn symptom(&self) -> bool {
        true
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        // Only gaps shorter than a millisecond: longer ones are the host busy elsewhere
        // (`gpu-low-utilization`), which no CUDA graph removes.
        let checks = interval_checks(a, |k| {
            (
                mid_step_gaps(a, k).0,
                a.splits[k].has_gpu() && launch_limited(a, k),
            )
        });
        let o = judge(self, a, ledger, GATE, checks, COST)?;
        let kernels = a.steady_mean(|m| m.kernels as f64);
        let short = a.steady_mean(|m| m.short_kernels as f64);
        let launches = a.steady_mean(|m| m.launch_calls as f64);
        let launch_ms = a.steady_mean(|m| m.launch_call_ns as f64) / 1e6;
        let delay = a.steady_mean(|m| m.launch_delay_median_ns.unwrap_or(0) as f64);
        // A negative delay is the clocks' (`ClockSkew`), not the launches'.
        let delay = if delay < 0.0 {
            "not measurable: the GPU records start before their launch calls, see clock-skew"
                .to_string()
        } else {
            format!("{:.1} µs", delay / 1e3)
        };
        let graph = a.steady_mean(|m| m.graph_kernels as f64);
        let replayed = if graph > 0.0 {
            format!(" ({graph:.0} of them replayed by graph launches, a launch call each replay)")
        } else {
            String::new()
        };
        let step = a.step_word();
        let summary = format!(
            "{:.0}% of the {kernels:.0} kernels per {step}{replayed} run under {SHORT_US} µs; {launches:.0} launch calls take {launch_ms:.2} ms of CPU time (median launch-to-start {delay}), and the GPU idles {:.2} ms per {step} between them",
            pct(short, kernels),
            o.impact.ms_per_step
        );
        let evidence = vec![Evidence {
            what: format!("{short:.0} kernels under {SHORT_US} µs per {step}"),
            steps: o.held.clone(),
            events: Vec::new(),
            count: Some(short.round() as u64),
            sources: Vec::new(),
        }];
        finding(self, o, summary, evidence, FIX_LAUNCH_BOUND)
    }
}

const CLOCK_SKEW_ABOUT: About = About {
    id: "clock-skew",
    title: "The GPU's and the host's clocks disagree",
    rule: "at least 10% of the GPU records start more than 1 µs before the host call that launched them",
    gates: &[],
    fixes: &[],
};

impl Observer for ClockSkew {
    fn about(&self) -> &'static About {
        &CLOCK_SKEW_ABOUT
    }

    fn observe(&self, a: &Analysis<'_>) -> Option<Note> {
        let e = &a.trace.events;
        let launched = a
            .trace
            .launches
            .iter()
            .filter(|l| e.kind[l.gpu as usize].is_gpu_work());
        let (mut n, mut leads) = (0usize, Vec::new());
        for l in launched {
            n += 1;
            let lead = e.start[l.launch as usize] - e.start[l.gpu as usize];
            if lead > LEAD_NS {
                leads.push(lead);
            }
        }
        if n == 0 || (leads.len() as f64) < SKEWED_SHARE * n as f64 {
            return None;
        }
        leads.sort_unstable();
        Some(self.about().note(format!(
            "{} of {n} GPU records start before the host call that launched them (by up to {:.1} µs, median {:.1} µs): launch-to-start times are not measurable, and times between host and GPU events are off by about that much",
            leads.len(),
            leads[leads.len() - 1] as f64 / 1e3,
            leads[leads.len() / 2] as f64 / 1e3,
        )))
    }
}
