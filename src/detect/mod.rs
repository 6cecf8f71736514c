//! The catalogue of performance anti-patterns: one detector per module, each with its
//! threshold, evidence, estimated time recoverable and fix.
//!
//! Reads the model, the windows and the metrics ([`Analysis`]); writes [`Finding`]s. Detectors are
//! unit structs listed in [`DETECTORS`]; the report and `ttap analyze --list` are generated from
//! that list.

mod allocator;
mod attention;
mod communication;
mod compile;
mod copies;
mod dataloader;
mod distributed;
mod fusion;
mod host_sync;
mod launch_bound;
mod layout;
mod optimizer;
mod pageable_copy;
mod tensor_cores;
mod utilization;

use crate::metrics::{measure, RangeMetrics};
use crate::model::Trace;
use crate::window::{split, Steps};

/// What every detector reads: the trace, its steps and windows, and their metrics.
pub struct Analysis<'t> {
    pub trace: &'t Trace,
    pub steps: Steps,
    /// One per step, in step order.
    pub step_metrics: Vec<RangeMetrics>,
    /// Indices of the steady-state steps (warm-up left out).
    pub steady: Vec<usize>,
}

impl<'t> Analysis<'t> {
    pub fn new(trace: &'t Trace) -> Analysis<'t> {
        let steps = split(trace);
        let step_metrics = steps
            .steps
            .iter()
            .map(|s| measure(trace, s.start, s.end))
            .collect();
        let steady = steps.steady();
        Analysis {
            trace,
            steps,
            step_metrics,
            steady,
        }
    }

    /// Mean over the steady-state steps of `f`.
    pub fn steady_mean(&self, f: impl Fn(&RangeMetrics) -> f64) -> f64 {
        if self.steady.is_empty() {
            return 0.0;
        }
        self.steady
            .iter()
            .map(|&i| f(&self.step_metrics[i]))
            .sum::<f64>()
            / self.steady.len() as f64
    }

    /// Mean steady-state step time, in nanoseconds.
    pub fn step_ns(&self) -> f64 {
        self.steady_mean(|m| m.dur() as f64)
    }

    /// An impact of `ns_per_step` nanoseconds per steady-state step.
    pub fn impact(&self, ns_per_step: f64, method: &'static str) -> Impact {
        let step = self.step_ns();
        Impact {
            ms_per_step: ns_per_step / 1e6,
            pct_of_step: if step > 0.0 {
                100.0 * ns_per_step / step
            } else {
                0.0
            },
            method,
        }
    }

    /// The steady-state step that contains time `ts`, if any.
    pub fn steady_step_at(&self, ts: i64) -> Option<usize> {
        let steps = &self.steps.steps;
        let k = steps.partition_point(|s| s.start <= ts).checked_sub(1)?;
        (ts < steps[k].end && self.steady.binary_search(&k).is_ok()).then_some(k)
    }

    /// The steady-state step numbers, for evidence.
    pub fn steady_numbers(&self) -> Vec<i64> {
        self.steady
            .iter()
            .map(|&i| self.steps.steps[i].number)
            .collect()
    }
}

/// How bad a finding is, from its share of the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Low,
    Medium,
    High,
}

impl Severity {
    /// High from 20% of the step, medium from 5%.
    pub fn of(pct_of_step: f64) -> Severity {
        if pct_of_step >= 20.0 {
            Severity::High
        } else if pct_of_step >= 5.0 {
            Severity::Medium
        } else {
            Severity::Low
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }
}

/// Time recoverable per steady-state step, and how it was estimated.
#[derive(Clone, Debug, PartialEq)]
pub struct Impact {
    pub ms_per_step: f64,
    pub pct_of_step: f64,
    pub method: &'static str,
}

/// What was seen, where.
#[derive(Clone, Debug, PartialEq)]
pub struct Evidence {
    pub what: String,
    /// Step numbers concerned (empty: the whole trace).
    pub steps: Vec<i64>,
    /// Event names, most important first.
    pub events: Vec<String>,
    pub count: Option<u64>,
}

/// The change that removes the problem.
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    pub summary: &'static str,
    pub snippet: &'static str,
}

/// One anti-pattern found in the trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// The detector's id; stable across versions.
    pub id: &'static str,
    pub title: &'static str,
    /// One sentence with the numbers.
    pub summary: String,
    pub severity: Severity,
    pub impact: Impact,
    /// 0 to 1: how sure the detector is that fixing this recovers the estimated time.
    pub confidence: f32,
    pub evidence: Vec<Evidence>,
    pub fix: Fix,
}

impl Finding {
    /// Whether the finding concerns step `number`: its evidence names it, or names no step at
    /// all (the whole trace).
    pub fn cites(&self, number: i64) -> bool {
        self.evidence.iter().all(|e| e.steps.is_empty())
            || self.evidence.iter().any(|e| e.steps.contains(&number))
    }
}

/// One anti-pattern's detector.
pub trait Detector: Sync {
    /// Stable id, e.g. `dataloader-bottleneck`.
    fn id(&self) -> &'static str;
    fn title(&self) -> &'static str;
    /// The threshold that triggers it, and where the value comes from.
    fn threshold(&self) -> &'static str;
    /// Every fix its findings can carry, the most common first: the catalogue a shared link or
    /// a saved report is rendered from (`share::render`), so that the page only ever shows its own
    /// fixes.
    fn fixes(&self) -> &'static [Fix];
    fn detect(&self, a: &Analysis<'_>) -> Option<Finding>;
}

/// Every detector, in catalogue order.
pub static DETECTORS: &[&dyn Detector] = &[
    &dataloader::DataLoaderBottleneck,
    &utilization::LowUtilization,
    &utilization::HostOnlyTime,
    &launch_bound::LaunchBound,
    &host_sync::HostSync,
    &pageable_copy::PageableCopy,
    &tensor_cores::NoTensorCores,
    &allocator::AllocatorChurn,
    &allocator::MemoryPressure,
    &communication::ExposedCommunication,
    &distributed::DataParallel,
    &distributed::DdpWithoutNccl,
    &layout::LayoutTransforms,
    &attention::UnfusedAttention,
    &attention::AttentionHotSpot,
    &copies::HeavyCopies,
    &optimizer::UnfusedOptimizer,
    &optimizer::ZeroGradMemset,
    &fusion::FusionCandidates,
    &compile::GraphBreaks,
];

/// The detector with this id, if this version has one.
pub fn detector(id: &str) -> Option<&'static dyn Detector> {
    DETECTORS.iter().copied().find(|d| d.id() == id)
}

/// Runs every detector; findings ranked by estimated time recoverable.
pub fn run(a: &Analysis<'_>) -> Vec<Finding> {
    let mut found: Vec<Finding> = DETECTORS.iter().filter_map(|d| d.detect(a)).collect();
    found.sort_by(|x, y| {
        y.impact
            .ms_per_step
            .total_cmp(&x.impact.ms_per_step)
            .then_with(|| y.severity.cmp(&x.severity))
            .then_with(|| x.id.cmp(y.id))
    });
    found
}

/// A finding's common parts, filled from the detector.
pub(crate) fn finding(
    d: &dyn Detector,
    summary: String,
    impact: Impact,
    confidence: f32,
    evidence: Vec<Evidence>,
    fix: Fix,
) -> Finding {
    Finding {
        id: d.id(),
        title: d.title(),
        summary,
        severity: Severity::of(impact.pct_of_step),
        impact,
        confidence,
        evidence,
        fix,
    }
}
