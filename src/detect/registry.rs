//! The catalogue: every detector and observer in the order they claim time, and [`run`], which
//! runs them on an [`Analysis`], names each finding's module and ranks the findings.

use super::contract::{pct, Detector, Finding, Note, Observer, Rejected};
use super::{
    allocator, attention, communication, compile, copies, dataloader, distributed, fusion,
    host_sync, launch_bound, layout, optimizer, pageable_copy, tensor_cores, utilization,
};
use crate::analysis::Analysis;
use crate::attribution::Ledger;

/// Every detector, in the order it claims time: causes first (data, the allocator,
/// synchronization, copies, the optimizer, `zero_grad`, then what a busy GPU spends: layout,
/// precision, attention, fusion, copies), the symptoms they leave (host-only time, launch gaps,
/// low utilization) last, so that a cause is charged what it costs where it runs and a symptom
/// only what no cause explains.
pub static DETECTORS: &[&dyn Detector] = &[
    &dataloader::DataLoaderBottleneck,
    &allocator::AllocatorChurn,
    &host_sync::HostSync,
    &pageable_copy::PageableCopy,
    &optimizer::UnfusedOptimizer,
    &optimizer::ZeroGradMemset,
    &communication::ExposedCommunication,
    &layout::LayoutTransforms,
    &tensor_cores::NoTensorCores,
    &attention::UnfusedAttention,
    &fusion::FusionCandidates,
    &copies::HeavyCopies,
    &utilization::HostOnlyTime,
    &launch_bound::LaunchBound,
    &utilization::LowUtilization,
];

/// The detector with this id, if this version has one.
pub fn detector(id: &str) -> Option<&'static dyn Detector> {
    DETECTORS.iter().copied().find(|d| d.id() == id)
}

/// The observer with this id, if this version has one.
pub fn observer(id: &str) -> Option<&'static dyn Observer> {
    OBSERVERS.iter().copied().find(|o| o.about().id == id)
}

/// Every observer, in catalogue order.
pub static OBSERVERS: &[&dyn Observer] = &[
    &allocator::MemoryPressure,
    &distributed::DataParallel,
    &distributed::DdpWithoutNccl,
    &attention::AttentionHotSpot,
    &compile::GraphBreaks,
    &compile::CompileTime,
    &host_sync::UnrecordedWork,
    &utilization::ColdStartLeftOut,
    &launch_bound::ClockSkew,
];

/// The findings, ranked by time recoverable per step, and the notes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Detected {
    pub findings: Vec<Finding>,
    pub notes: Vec<Note>,
    /// The largest sum of the findings' time in one steady step, as a share of that step (in
    /// percent); at most 100 by construction (the ledger).
    pub max_step_claimed_pct: f64,
}

/// Runs every detector and observer.
pub fn run(a: &Analysis<'_>) -> Detected {
    let mut ledger = Ledger::new(a.steps.steps.len());
    let mut out = Detected::default();
    let decode = a.decode_view();
    for d in DETECTORS {
        if (d.training_only() && !a.training) || (a.serving.is_some() && d.assumes_training()) {
            continue;
        }
        let read = match &decode {
            Some(decode) if d.reads_decode() => decode,
            _ => a,
        };
        match d.detect(read, &mut ledger) {
            Ok(f) => out.findings.push(*f),
            Err(Rejected(Some(n))) => out.notes.push(n),
            Err(Rejected(None)) => {}
        }
    }
    out.notes
        .extend(OBSERVERS.iter().filter_map(|o| o.observe(a)));
    name_modules(a, &mut out.findings);
    out.max_step_claimed_pct = a
        .steady
        .iter()
        .map(|&k| {
            let number = a.steps.steps[k].number;
            let ms: f64 = out
                .findings
                .iter()
                .flat_map(|f| f.step_costs.iter().filter(|c| c.number == number))
                .map(|c| c.ms)
                .sum();
            pct(ms * 1e6, a.splits[k].dur() as f64)
        })
        .fold(0.0, f64::max);
    out.findings.sort_by(|x, y| {
        y.impact
            .ms_per_step
            .total_cmp(&x.impact.ms_per_step)
            .then_with(|| y.severity.cmp(&x.severity))
            .then_with(|| x.id.cmp(y.id))
    });
    out
}

/// Names each finding's module: the frame holding most of its evidence's events' time (none
/// where the trace has no module frame, or the evidence is not events).
fn name_modules(a: &Analysis<'_>, findings: &mut [Finding]) {
    // DataLoader and optimizer ranges run outside the model's modules, whatever encloses them.
    let outside = |i: usize| {
        matches!(
            crate::window::phase_of(a.trace.name_of(i)),
            Some(crate::window::Phase::DataLoading | crate::window::Phase::Optimizer)
        )
    };
    let sources = |f: &Finding| -> Vec<usize> {
        f.evidence
            .iter()
            .flat_map(|e| e.sources.iter().copied())
            .filter(|&i| !outside(i))
            .collect()
    };
    if findings.iter().all(|f| sources(f).is_empty()) {
        return;
    }
    let Some(frames) = crate::modules::Frames::of(a.trace) else {
        return;
    };
    for f in findings {
        let events = sources(f);
        if !events.is_empty() {
            f.module = frames.holder(a.trace, &events);
        }
    }
}
