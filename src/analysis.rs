//! A trace prepared for the rules and the views: its steps and windows, each step's metrics and
//! time split on the main GPU, the steady steps, whether it trains, its main device, whether it
//! records the host alone, the allocator's memory, and a serving capture's typed iterations
//! (`serving`). Made once per trace
//! (`AnalyzedTrace`, the door, holds it); the detectors, the report, the profile, the
//! timeline's bands, the Perfetto export and the LLM summaries read it. The per-step arithmetic
//! that only the detectors use (a finding's impact, evidence references) is theirs, in
//! `detect/mod.rs`.

use crate::attribution::{main_device, split_steps, StepSplit};
use crate::memory::Memory;
use crate::metrics::{in_range, measure, pct, RangeMetrics};
use crate::model::{EventKind, Trace, NONE};
use crate::serving::Serving;
use crate::window::{split, Steps};

/// What the rules and the views read of a trace: its steps and windows, their metrics and split.
#[derive(Clone)]
pub struct Analysis<'t> {
    pub trace: &'t Trace,
    pub steps: Steps,
    /// One per step, in step order.
    pub step_metrics: Vec<RangeMetrics>,
    /// One per step, in step order: the step's time split on the main GPU.
    pub splits: Vec<StepSplit>,
    /// Indices of the steady-state steps (warm-up left out).
    pub steady: Vec<usize>,
    /// Whether the trace records training (backward or optimizer work), not inference.
    pub training: bool,
    /// The GPU the attribution is of (`None`: no GPU work; `Some(None)`: a GPU without index).
    pub main_device: Option<Option<i64>>,
    /// The trace records the host alone (no GPU or other accelerator activity, no runtime
    /// call): detectors that can measure their pattern on the host claim host time instead.
    pub cpu_only: bool,
    /// The allocator's memory per device (empty without `[memory]` events).
    pub memory: Memory,
    /// A serving capture's iterations, typed and measured (`None` for any other capture).
    pub serving: Option<Serving>,
}

impl<'t> Analysis<'t> {
    pub fn new(trace: &'t Trace) -> Analysis<'t> {
        let steps = split(trace);
        let step_metrics = steps
            .steps
            .iter()
            .map(|s| measure(trace, s.start, s.end))
            .collect();
        let ranges: Vec<(i64, i64)> = steps.steps.iter().map(|s| (s.start, s.end)).collect();
        let splits = split_steps(trace, &ranges);
        let steady = steps.steady();
        let busy: Vec<i64> = splits.iter().map(StepSplit::busy_ns).collect();
        let serving = Serving::of(trace, &busy);
        Analysis {
            trace,
            steps,
            step_metrics,
            splits,
            steady,
            training: is_training(trace),
            main_device: main_device(trace),
            cpu_only: is_cpu_only(trace),
            memory: Memory::of(trace),
            serving,
        }
    }

    /// A serving capture's decode iterations as the steady steps, where it has any steady
    /// one: what launch overhead and host syncs cost is a decode iteration's (`None`
    /// otherwise: the rules read every steady step).
    pub fn decode_view(&self) -> Option<Analysis<'t>> {
        let decode = self.serving.as_ref()?.decode_steps();
        let steady: Vec<usize> = self
            .steady
            .iter()
            .copied()
            .filter(|k| decode.binary_search(k).is_ok())
            .collect();
        (!steady.is_empty()).then(|| Analysis {
            steady,
            ..self.clone()
        })
    }

    /// What the texts call a step ("iteration" in a serving capture).
    pub(crate) fn step_word(&self) -> &'static str {
        crate::serving::step_word(self.serving.as_ref())
    }

    /// `total`, counted over the steady-state steps, per steady step (`total` itself without
    /// any).
    pub(crate) fn per_step(&self, total: f64) -> f64 {
        total / self.steady.len().max(1) as f64
    }

    /// Mean over the steady-state steps of `f` of the step's index (0 without any).
    pub(crate) fn steady_mean_by(&self, f: impl Fn(usize) -> f64) -> f64 {
        if self.steady.is_empty() {
            return 0.0;
        }
        self.per_step(self.steady.iter().map(|&k| f(k)).sum())
    }

    /// Mean over the steady-state steps of `f` of the step's metrics.
    pub(crate) fn steady_mean(&self, f: impl Fn(&RangeMetrics) -> f64) -> f64 {
        self.steady_mean_by(|k| f(&self.step_metrics[k]))
    }

    /// Mean steady-state step time, in nanoseconds.
    pub fn step_ns(&self) -> f64 {
        self.steady_mean(|m| m.dur() as f64)
    }

    /// Mean time the main GPU is busy in a steady-state step, in nanoseconds.
    pub fn busy_ns(&self) -> f64 {
        self.steady_mean_by(|k| self.splits[k].busy_ns() as f64)
    }

    /// The steady-state step that contains time `ts`, if any.
    pub(crate) fn steady_step_at(&self, ts: i64) -> Option<usize> {
        let steps = &self.steps.steps;
        let k = steps.partition_point(|s| s.start <= ts).checked_sub(1)?;
        (ts < steps[k].end && self.steady.binary_search(&k).is_ok()).then_some(k)
    }

    /// `[start, end)` of step `step`.
    pub fn range(&self, step: usize) -> (i64, i64) {
        let s = &self.steps.steps[step];
        (s.start, s.end)
    }

    /// `ns` nanoseconds as a share of step `step`, in percent.
    pub fn pct_of_step(&self, step: usize, ns: i64) -> f64 {
        let (start, end) = self.range(step);
        pct(ns, end - start)
    }

    /// GPU work (kernels, collectives, copies, memsets) of the main device that starts in step
    /// `step`, track by track, each track in start order.
    pub fn gpu_work(&self, step: usize) -> Vec<usize> {
        let t = self.trace;
        let Some(device) = self.main_device else {
            return Vec::new();
        };
        let (start, end) = self.range(step);
        let mut out = Vec::new();
        for (k, track) in t.tracks.iter().enumerate() {
            if track.gpu && track.device == device {
                out.extend(
                    in_range(t, k, start, end)
                        .filter(|&i| t.events.start[i] >= start && t.events.kind[i].is_gpu_work()),
                );
            }
        }
        out
    }
}

/// Backward or optimizer ops on the CPU: the trace records training.
fn is_training(t: &Trace) -> bool {
    let e = &t.events;
    let mut seen = rustc_hash::FxHashSet::default();
    t.recorded().any(|i| {
        matches!(e.kind[i], EventKind::CpuOp | EventKind::UserAnnotation)
            && seen.insert(e.name[i])
            && {
                let name = t.name_of(i);
                name.starts_with("autograd::engine")
                    || name.starts_with("Optimizer.step")
                    || name.contains("Backward0")
                    || name.contains("## backward ##")
            }
    })
}

/// Only host-side events (ops, ranges, Python frames, steps, memory records, profiler
/// bookkeeping, untimed marks): no GPU or other accelerator work (an `mtia_runtime` range is
/// an `Other` with a duration) and no runtime call; and no sign that the work ran on a GPU all
/// the same, recorded with CPU activity only (cuDNN, MIOpen or cuBLAS ops, device memory).
fn is_cpu_only(t: &Trace) -> bool {
    let e = &t.events;
    let mut seen = rustc_hash::FxHashSet::default();
    let on_gpu = |i: usize, seen: &mut rustc_hash::FxHashSet<u32>| match e.kind[i] {
        EventKind::CpuOp => {
            seen.insert(e.name[i]) && {
                let name = t.name_of(i).to_ascii_lowercase();
                ["cudnn", "miopen", "cublas"]
                    .iter()
                    .any(|p| name.contains(p))
            }
        }
        EventKind::Memory => {
            e.detail[i] != NONE
                && t.details
                    .memory(e.detail[i])
                    .device_type
                    .is_some_and(|d| d != 0)
        }
        _ => false,
    };
    !t.tracks.iter().any(|tr| tr.gpu)
        && t.recorded().all(|i| match e.kind[i] {
            EventKind::CpuOp | EventKind::Memory => !on_gpu(i, &mut seen),
            EventKind::UserAnnotation
            | EventKind::PythonFunction
            | EventKind::ProfilerStep
            | EventKind::Profiler => true,
            EventKind::Other => e.dur[i] == 0,
            _ => false,
        })
}
