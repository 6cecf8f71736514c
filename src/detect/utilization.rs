//! GPU starved mid-step while its kernels are not short (the host is slow to queue work), and
//! host-only parts of the step (preprocessing before the first GPU work, work after the last)
//! that leave the GPU with nothing to do.

use super::{
    finding, interval_checks, judge, part_checks, pct, Analysis, Detector, Evidence, Fix, Gate,
    Verdict,
};
use crate::attribution::{intersect, Intervals, Ledger, Part};
use crate::metrics::{merge, SHORT_KERNEL_NS};
use crate::model::StepSource;

pub struct LowUtilization;
pub struct HostOnlyTime;

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

/// Whether at least [`SHORT_SHARE`] of step `k`'s kernels are short.
pub(crate) fn mostly_short(a: &Analysis<'_>, k: usize) -> bool {
    let m = &a.step_metrics[k];
    m.kernels > 0 && m.short_kernels as f64 >= SHORT_SHARE * m.kernels as f64
}

const LOW_UTILIZATION: Gate = Gate {
    quantity: "GPU idle between its first and last work of the step, not waiting for data, the allocator or a sync, % of the step",
    threshold: 20.0,
};
/// Kernels shorter than `SHORT_KERNEL_NS` from this share make the step launch-bound instead.
pub(crate) const SHORT_SHARE: f64 = 0.5;
/// A GPU busy this share of the step is not under-utilized, whatever its gaps.
const BUSY_SHARE: f64 = 0.8;
const HOST_ONLY: Gate = Gate {
    quantity: "GPU idle before the step's first GPU work and after its last, not waiting for data, % of the step",
    threshold: 25.0,
};
/// Host-only time is judged on steps with at least this many kernels (a step with a handful
/// of kernels is a micro-benchmark or a hand-reduced fixture, not a training step).
const HOST_ONLY_KERNELS: u64 = 10;

const FIX_LOW_UTILIZATION: Fix = Fix {
    summary: "Take Python overhead off the critical path: compile the model, capture CUDA graphs, or raise the batch size so each launch does more work.",
    snippet: "model = torch.compile(model, mode=\"reduce-overhead\")  # fuses ops and uses CUDA graphs",
};

const FIX_HOST_ONLY_TIME: Fix = Fix {
    summary: "Prepare inputs ahead of the step: decode and resize in DataLoader workers (or on the GPU), convert to tensors there, and copy pinned batches with non_blocking=True while the previous step runs.",
    snippet: "loader = DataLoader(dataset, batch_size=B, num_workers=8, pin_memory=True,\n                    collate_fn=preprocess_batch)  # preprocessing runs in the workers",
};

impl Detector for LowUtilization {
    fn id(&self) -> &'static str {
        "gpu-low-utilization"
    }

    fn title(&self) -> &'static str {
        "The GPU is idle for much of the step"
    }

    fn threshold(&self) -> &'static str {
        "GPU idle between its first and last work of the step (not waiting for data, the allocator or a sync) at least 20% of the step, with GPU busy under 80% of the step, in at least half of the steady steps; where at least half of the kernels run under 10 µs, only gaps of 1 ms or more count (shorter ones are launch-bound)"
    }

    fn fixes(&self) -> &'static [Fix] {
        std::slice::from_ref(&FIX_LOW_UTILIZATION)
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
            let claim = if mostly_short(a, k) {
                long
            } else {
                merge(short.into_iter().chain(long).collect())
            };
            let applies = s.has_gpu() && a.step_metrics[k].kernels > 0 && busy < BUSY_SHARE;
            (claim, applies)
        });
        let o = match judge(
            self,
            a,
            ledger,
            LOW_UTILIZATION,
            checks,
            "GPU idle between its first and last work of the step that no other finding explains, mean over steady-state steps",
        ) {
            Ok(o) => o,
            Err(rejected) => return rejected.into(),
        };
        let mean = |p: Part| {
            a.steady
                .iter()
                .map(|&k| a.splits[k].ns(p) as f64)
                .sum::<f64>()
                / a.steady.len().max(1) as f64
                / 1e6
        };
        let (launch, kernel, other) = (
            mean(Part::IdleLaunch),
            mean(Part::IdleKernelWait),
            mean(Part::IdleOther),
        );
        let busy = a
            .steady
            .iter()
            .map(|&k| a.splits[k].busy_ns() as f64)
            .sum::<f64>()
            / a.steady.len().max(1) as f64;
        let summary = format!(
            "the GPU is busy {:.0}% of the step; mid-step it idles {launch:.2} ms waiting for launches, {kernel:.2} ms in launch gaps and {other:.2} ms otherwise per step",
            pct(busy, a.step_ns())
        );
        let evidence = vec![Evidence {
            what: format!(
                "mid-step GPU idle of at least {}% of the step in {} of {} steady steps",
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

impl Detector for HostOnlyTime {
    fn id(&self) -> &'static str {
        "host-only-time"
    }

    fn title(&self) -> &'static str {
        "Parts of the step run on the host alone"
    }

    fn threshold(&self) -> &'static str {
        "GPU idle before the step's first GPU work and after its last (not waiting for data: that is dataloader-bottleneck) at least 25% of the step, in at least half of the steady ProfilerStep steps with at least 10 kernels"
    }

    fn fixes(&self) -> &'static [Fix] {
        std::slice::from_ref(&FIX_HOST_ONLY_TIME)
    }

    fn symptom(&self) -> bool {
        true
    }

    fn detect(&self, a: &Analysis<'_>, ledger: &mut Ledger) -> Verdict {
        if a.steps.source != StepSource::ProfilerSteps {
            return Verdict::Nothing;
        }
        let checks = part_checks(a, &[Part::IdleHostOnly], |k| {
            a.step_metrics[k].kernels >= HOST_ONLY_KERNELS
        });
        let o = match judge(
            self,
            a,
            ledger,
            HOST_ONLY,
            checks,
            "GPU idle before the first and after the last GPU work of the step, not inside DataLoader ranges, mean over steady-state steps: host work moved off the critical path (or overlapped with the next step) leaves the GPU no gap",
        ) {
            Ok(o) => o,
            Err(rejected) => return rejected.into(),
        };
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
