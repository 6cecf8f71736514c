//! GPU starved mid-step while its kernels are not short (the host is slow to queue work), and
//! host-only parts of the step (preprocessing before the first GPU work, work after the last)
//! that leave the GPU with nothing to do; a note where the capture's cold start was left out.

use super::contract::{
    finding, interval_checks, judge, part_checks, pct, About, Detector, Evidence, Fix, Gate, Note,
    Observer, Rejected, Verdict,
};
use crate::analysis::Analysis;
use crate::attribution::{intersect, Intervals, Ledger, Part};
use crate::metrics::{merge, total, SHORT_KERNEL_NS};
use crate::model::{EventKind, StepSource};
use crate::window::{COLD_CALL_NS, COLD_SHARE};
use rustc_hash::FxHashMap;

pub(crate) struct LowUtilization;
pub(crate) struct HostOnlyTime;

/// Mid-step idle not explained by data, allocator or sync waits.
pub(crate) const MID_STEP_IDLE: [Part; 3] =
    [Part::IdleLaunch, Part::IdleKernelWait, Part::IdleOther];

/// A mid-step GPU gap this long or longer is the host busy with something else, not launch
/// overhead: a launch costs microseconds, and no CUDA graph or fusion recovers a millisecond
/// with no work queued. Such gaps are low utilization whatever the kernels' lengths.
pub(crate) const LONG_GAP_NS: i64 = 1_000_000;

/// Step `k`'s mid-step idle ([`MID_STEP_IDLE`]) in gaps shorter than [`LONG_GAP_NS`], and in
/// longer ones; a gap is a stretch the GPU idles, for any reason, between two pieces of work.
pub(crate) fn mid_step_gaps(a: &Analysis<'_>, k: usize) -> (Intervals, Intervals) {
    let s = &a.splits[k];
    let idle: Vec<Part> = Part::ALL.into_iter().filter(|p| p.is_idle()).collect();
    let (long, short): (Intervals, Intervals) = s
        .intervals_of(&idle)
        .into_iter()
        .partition(|&(x, y)| y - x >= LONG_GAP_NS);
    let mid = s.intervals_of(&MID_STEP_IDLE);
    (intersect(&mid, &short), intersect(&mid, &long))
}

/// Whether step `k`'s kernels are launch overhead's to wait on: at least [`SHORT_SHARE`] of them
/// are short, counted as the host launched them (a graph replay is one launch, short where its
/// kernels are in all: `RangeMetrics::launched`); or the median kernel runs shorter than the host takes to issue one
/// ([`kernels_outrun_their_ops`]: whatever "short" is on this GPU, the host cannot keep it fed)
/// and the gaps under [`LONG_GAP_NS`] are most of the mid-step idle (else the host is mostly
/// busy with something else than issuing kernels: low utilization).
pub(crate) fn launch_limited(a: &Analysis<'_>, k: usize) -> bool {
    let m = &a.step_metrics[k];
    m.launched > 0
        && (m.short_launched as f64 >= SHORT_SHARE * m.launched as f64 || {
            let (short, long) = mid_step_gaps(a, k);
            total(&short) >= total(&long) && kernels_outrun_their_ops(a, k)
        })
}

/// Whether step `k`'s median kernel is shorter than the median host time per kernel of the ops
/// that launch them: each kernel's launch call belongs to an outermost CPU op (`aten::conv2d`,
/// `aten::add`), whose duration, shared among the kernels it launches, is what the host spends
/// to issue each. A graph replay counts as one kernel, as long as its kernels in all: the host
/// issues it with one call. False where the launches have no enclosing op.
fn kernels_outrun_their_ops(a: &Analysis<'_>, k: usize) -> bool {
    let t = a.trace;
    let e = &t.events;
    let mut durations = Vec::new();
    let mut ops: Vec<usize> = Vec::new();
    let mut replays: FxHashMap<u32, i64> = FxHashMap::default();
    for i in a.gpu_work(k) {
        if e.kind[i] != EventKind::GpuKernel {
            continue;
        }
        let launch = t.launch_of(i as u32);
        match launch.filter(|&l| t.is_graph_launch(l as usize)) {
            Some(graph) => *replays.entry(graph).or_default() += e.dur[i],
            None => {
                durations.push(e.dur[i]);
                ops.extend(launch.and_then(|l| t.outermost_op(l as usize)));
            }
        }
    }
    for (graph, ns) in replays {
        durations.push(ns);
        ops.extend(t.outermost_op(graph as usize));
    }
    ops.sort_unstable();
    // Per kernel, its op's duration over the kernels that op launched.
    let per_kernel: Vec<i64> = ops
        .chunk_by(|x, y| x == y)
        .flat_map(|same| {
            let n = same.len() as i64;
            std::iter::repeat_n(e.dur[same[0]] / n, same.len())
        })
        .collect();
    match (median(durations), median(per_kernel)) {
        (Some(kernel), Some(host)) => kernel < host,
        _ => false,
    }
}

fn median(mut v: Vec<i64>) -> Option<i64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

const LOW_UTILIZATION: Gate = Gate {
    quantity: "GPU idle between its first and last work of the step, not waiting for data, the allocator or a sync, % of the step",
    threshold: 20.0,
};
/// How a finding's time is counted.
const LOW_UTILIZATION_COST: &str = "GPU idle between its first and last work of the step that no other finding explains, mean over steady-state steps";
/// Kernels shorter than `SHORT_KERNEL_NS` from this share make the step launch-bound instead.
pub(crate) const SHORT_SHARE: f64 = 0.5;
/// A GPU busy this share of the step is not under-utilized, whatever its gaps.
const BUSY_SHARE: f64 = 0.8;
const HOST_ONLY: Gate = Gate {
    quantity: "GPU idle before the step's first GPU work and after its last, not waiting for data, % of the step",
    threshold: 25.0,
};
/// How a finding's time is counted.
const HOST_ONLY_COST: &str = "GPU idle before the first and after the last GPU work of the step, not inside DataLoader ranges, mean over steady-state steps: host work moved off the critical path (or overlapped with the next step) leaves the GPU no gap";

const FIX_LOW_UTILIZATION: Fix = Fix {
    summary: "Take Python overhead off the critical path: compile the model, capture CUDA graphs, or raise the batch size so each launch does more work.",
    snippet: "model = torch.compile(model, mode=\"reduce-overhead\")  # fuses ops and uses CUDA graphs",
    terms: &["torch.compile", "CUDA graph", "batch size", "reduce-overhead"],
};

const FIX_HOST_ONLY_TIME: Fix = Fix {
    summary: "Prepare inputs ahead of the step: decode and resize in DataLoader workers (or on the GPU), convert to tensors there, and copy pinned batches with non_blocking=True while the previous step runs.",
    snippet: "loader = DataLoader(dataset, batch_size=B, num_workers=8, pin_memory=True,\n                    collate_fn=preprocess_batch)  # preprocessing runs in the workers",
    terms: &["DataLoader workers", "num_workers", "pin_memory", "non_blocking", "collate_fn"],
};

const LOW_UTILIZATION_ABOUT: About = About {
    id: "gpu-low-utilization",
    title: "The GPU is idle for much of the step",
    rule: "GPU idle between its first and last work of the step (not waiting for data, the allocator or a sync) at least {0}% of the step, with GPU busy under 80% of the step, in at least half of the steady steps; where at least half of the kernels run under 10 µs or the median kernel is shorter than the host time per kernel of the ops launching them and gaps under 1 ms are most of the mid-step idle, only gaps of 1 ms or more count (shorter ones are launch-bound)",
    gates: &[LOW_UTILIZATION],
    fixes: std::slice::from_ref(&FIX_LOW_UTILIZATION),
};

impl Detector for LowUtilization {
    fn about(&self) -> &'static About {
        &LOW_UTILIZATION_ABOUT
    }

    fn symptom(&self) -> bool {
        true
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        // Long gaps always; short ones where the kernels are not mostly short (else they are
        // launch overhead: `launch_bound`).
        let checks = interval_checks(a, |k| {
            let s = &a.splits[k];
            let busy = s.busy_ns() as f64 / s.dur().max(1) as f64;
            let (short, long) = mid_step_gaps(a, k);
            let claim = if launch_limited(a, k) {
                long
            } else {
                merge(short.into_iter().chain(long).collect())
            };
            let applies = s.has_gpu() && a.step_metrics[k].kernels > 0 && busy < BUSY_SHARE;
            (claim, applies)
        });
        let o = judge(
            self,
            a,
            ledger,
            LOW_UTILIZATION,
            checks,
            LOW_UTILIZATION_COST,
        )?;
        let mean = |p: Part| a.steady_mean_by(|k| a.splits[k].ns(p) as f64) / 1e6;
        let (launch, kernel, other) = (
            mean(Part::IdleLaunch),
            mean(Part::IdleKernelWait),
            mean(Part::IdleOther),
        );
        let step = a.step_word();
        let summary = format!(
            "the GPU is busy {:.0}% of the {step}; mid-{step} it idles {launch:.2} ms waiting for launches, {kernel:.2} ms in launch gaps and {other:.2} ms otherwise per {step}",
            pct(a.busy_ns(), a.step_ns())
        );
        let evidence = vec![Evidence {
            what: format!(
                "mid-{step} GPU idle of at least {}% of the {step} in {} of {} steady {step}s",
                LOW_UTILIZATION.threshold,
                o.held.len(),
                a.steady.len()
            ),
            steps: o.held.clone(),
            events: Vec::new(),
            count: None,
            sources: Vec::new(),
        }];
        finding(self, o, summary, evidence, FIX_LOW_UTILIZATION)
    }
}

const HOST_ONLY_TIME_ABOUT: About = About {
    id: "host-only-time",
    title: "Parts of the step run on the host alone",
    rule: "GPU idle before the step's first GPU work and after its last (not waiting for data: that is dataloader-bottleneck) at least {0}% of the step, in at least half of the steady steps (ProfilerStep steps or the iterations of a loop, not a capture cut around its GPU work)",
    gates: &[HOST_ONLY],
    fixes: std::slice::from_ref(&FIX_HOST_ONLY_TIME),
};

impl Detector for HostOnlyTime {
    fn about(&self) -> &'static About {
        &HOST_ONLY_TIME_ABOUT
    }

    fn assumes_training(&self) -> bool {
        true
    }

    fn symptom(&self) -> bool {
        true
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        // A step cut around the GPU's work (the whole trace, no loop seen) has no host-only
        // edges of its own: they are the capture's, not the step's.
        if a.steps.source == StepSource::WholeTrace {
            return Err(Rejected::NOTHING);
        }
        let checks = part_checks(a, &[Part::IdleHostOnly], |_| true);
        let o = judge(self, a, ledger, HOST_ONLY, checks, HOST_ONLY_COST)?;
        let summary = format!(
            "each step spends {:.2} ms ({:.0}% of the step) on the host alone, before its first GPU work or after its last; the GPU idles meanwhile",
            o.impact.ms_per_step, o.impact.pct_of_step
        );
        let evidence = vec![Evidence {
            what: "host-only time at the start and end of the step".into(),
            steps: o.held.clone(),
            events: Vec::new(),
            count: None,
            sources: Vec::new(),
        }];
        finding(self, o, summary, evidence, FIX_HOST_ONLY_TIME)
    }
}

/// Kernels shorter than this are short (re-exported for the launch-bound detector's text).
pub(crate) const SHORT_US: i64 = SHORT_KERNEL_NS / 1000;

pub(crate) struct ColdStartLeftOut;

/// One-off host calls or DataLoader ranges this long, before a first step's first launch…
const COLD_CALL: Gate = Gate {
    quantity: "one-off host call or multiprocessing DataLoader range before the first launch, ms",
    threshold: (COLD_CALL_NS / 1_000_000) as f64,
};
/// …filling this share of the step: its cold start, left out.
const COLD_LEAD: Gate = Gate {
    quantity: "such calls and ranges, % of the step",
    threshold: COLD_SHARE * 100.0,
};

const COLD_START_ABOUT: About = About {
    id: "cold-start",
    title: "The capture's cold start, left out",
    rule: "a capture without ProfilerStep ranges whose first step spends at least {1}% of its time, before its first launch, in one-off host calls or multiprocessing DataLoader ranges of at least {0} ms each (CUDA's lazy initialisation in cudaFree, cuDNN's first handle, DataLoader workers starting): the step is read from its first kernel's launch on",
    gates: &[COLD_CALL, COLD_LEAD],
    fixes: &[],
};

impl Observer for ColdStartLeftOut {
    fn about(&self) -> &'static About {
        &COLD_START_ABOUT
    }

    fn observe(&self, a: &Analysis<'_>) -> Option<Note> {
        let step = a.steps.steps.first()?;
        let cold = step.cold_start?;
        let left_out = cold.end - cold.start;
        Some(self.about().note(format!(
            "the first {:.1} ms before the first launch ({:.0}% of the capture's first step; the longest: {}) are start-up, not the workload: the findings read the {:.1} ms after it",
            left_out as f64 / 1e6,
            pct(left_out as f64, (step.end - cold.start) as f64),
            a.event_ref(cold.longest as usize),
            step.dur() as f64 / 1e6,
        )))
    }
}
