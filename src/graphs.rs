//! CUDA and HIP graphs: each graph launch (`cudaGraphLaunch`, `hipGraphLaunch`) and the kernels
//! its replay ran. A replayed kernel carries the correlation id of its graph launch (Kineto),
//! so the model's launch links tie it to the launch; without one, `ingest::assemble` ties it by
//! time. One host call replays the whole graph: the launch-bound logic counts it as one launch
//! (`metrics::RangeMetrics::launched`).

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::model::{EventKind, Trace};

/// Nanoseconds per millisecond.
const NS_PER_MS: f64 = 1e6;

/// The graph launches of a trace and the kernels they replayed: "412 kernels in 3 graph
/// launches".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GraphSummary {
    /// Graph launch calls.
    pub launches: u64,
    /// Kernels (collectives included) the launches replayed.
    pub kernels: u64,
    /// The replayed kernels' GPU time (sum of their durations).
    pub gpu_ms: f64,
    /// Per step, the launches called in it and the kernels they replayed (wherever those ran);
    /// steps without a graph launch are left out.
    #[serde(default)]
    pub steps: Vec<GraphStep>,
    /// Replayed kernels tied to the operator that launched the same kernel where the trace
    /// records it (`Trace::replayed_from`), and their GPU time; the rest is unattributed.
    #[serde(default)]
    pub tied_kernels: u64,
    #[serde(default)]
    pub tied_ms: f64,
    /// The capture trace given beside this one that tied them (`Trace::captured`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<String>,
}

/// A step's graph launches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphStep {
    pub step: i64,
    pub launches: u64,
    pub kernels: u64,
    pub gpu_ms: f64,
}

impl GraphSummary {
    /// "412 kernels in 3 graph launches (9.66 ms of GPU time); 400 of them (9.20 ms) tied to
    /// the operators that launched them, 0.46 ms unattributed".
    pub fn line(&self) -> String {
        let unattributed = (self.gpu_ms - self.tied_ms).max(0.0);
        format!(
            "{} kernel{} in {} graph launch{} ({:.2} ms of GPU time); {}",
            self.kernels,
            if self.kernels == 1 { "" } else { "s" },
            self.launches,
            if self.launches == 1 { "" } else { "es" },
            self.gpu_ms,
            if self.tied_kernels == 0 {
                let recorded = match &self.capture {
                    Some(c) => format!("neither the trace nor the capture trace {c} records a run of the same kernels"),
                    None => "the trace records no capture or run of the same kernels".to_string(),
                };
                format!("none tied to the operator that launched it ({recorded}): {unattributed:.2} ms unattributed, without shapes, FLOPs or module below the graph launch")
            } else {
                format!(
                    "{} of them ({:.2} ms) tied by kernel order and name to the operators that launched the same kernels{}, {unattributed:.2} ms unattributed",
                    self.tied_kernels,
                    self.tied_ms,
                    self.capture
                        .as_ref()
                        .map_or(String::new(), |c| format!(" (in the capture trace {c})"))
                )
            }
        )
    }

    /// " Per step (mean of 5 steps with graph launches): 14 launches, 27 kernels, 21.02 ms.",
    /// or nothing where one step holds them all.
    pub fn per_step(&self) -> String {
        if self.steps.len() < 2 {
            return String::new();
        }
        let n = self.steps.len() as f64;
        let mean = |f: fn(&GraphStep) -> f64| self.steps.iter().map(f).sum::<f64>() / n;
        format!(
            " Per step (mean of {} steps with graph launches): {:.1} launches, {:.1} kernels, {:.2} ms of GPU time.",
            self.steps.len(),
            mean(|s| s.launches as f64),
            mean(|s| s.kernels as f64),
            mean(|s| s.gpu_ms)
        )
    }
}

/// The trace's graph launch calls, in time order.
pub fn launches(t: &Trace) -> Vec<u32> {
    let mut calls: Vec<u32> = t
        .recorded()
        .filter(|&i| t.is_graph_launch(i))
        .map(|i| i as u32)
        .collect();
    calls.sort_unstable_by_key(|&i| (t.events.start[i as usize], i));
    calls
}

/// Whether `event` is a kernel (a collective included).
fn is_kernel(t: &Trace, event: u32) -> bool {
    matches!(
        t.events.kind[event as usize],
        EventKind::GpuKernel | EventKind::Collective
    )
}

/// The kernels each graph launch replayed: launch → (count, ns).
fn replayed(t: &Trace) -> FxHashMap<u32, (u64, i64)> {
    let mut per: FxHashMap<u32, (u64, i64)> = FxHashMap::default();
    for l in &t.launches {
        if is_kernel(t, l.gpu) && t.is_graph_launch(l.launch as usize) {
            let e = per.entry(l.launch).or_default();
            e.0 += 1;
            e.1 += t.events.dur[l.gpu as usize];
        }
    }
    per
}

/// The summary, with `steps` as `(number, start, end)`; `None` where the trace has no graph
/// launch. A launch belongs to the step its call starts in.
pub fn summarize(t: &Trace, steps: &[(i64, i64, i64)]) -> Option<GraphSummary> {
    let calls = launches(t);
    if calls.is_empty() {
        return None;
    }
    let per = replayed(t);
    let of = |l: &u32| per.get(l).copied().unwrap_or_default();
    let total = |ls: &[u32]| {
        ls.iter()
            .map(of)
            .fold((0, 0), |(k, ns), (k2, ns2)| (k + k2, ns + ns2))
    };
    let (kernels, ns) = total(&calls);
    let (tied_kernels, tied_ns) = t
        .replayed_from
        .iter()
        .filter(|l| is_kernel(t, l.gpu))
        .fold((0, 0), |(k, ns), l| {
            (k + 1, ns + t.events.dur[l.gpu as usize])
        });
    let steps = steps
        .iter()
        .filter_map(|&(number, start, end)| {
            let from = calls.partition_point(|&c| t.events.start[c as usize] < start);
            let to = calls.partition_point(|&c| t.events.start[c as usize] < end);
            let (kernels, ns) = total(&calls[from..to]);
            (to > from).then_some(GraphStep {
                step: number,
                launches: (to - from) as u64,
                kernels,
                gpu_ms: ns as f64 / NS_PER_MS,
            })
        })
        .collect();
    Some(GraphSummary {
        launches: calls.len() as u64,
        kernels,
        gpu_ms: ns as f64 / NS_PER_MS,
        steps,
        capture: t.captured.as_ref().map(|c| c.from.clone()),
        tied_kernels,
        tied_ms: tied_ns as f64 / NS_PER_MS,
    })
}

/// A graph launch as a kernel's details name it: the `ordinal`-th (from 1) of the trace's
/// graph launches, which replayed `kernels` kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchOf {
    pub ordinal: usize,
    pub launches: usize,
    pub kernels: u64,
}

/// Where `launch`, a graph launch call, stands among the trace's graph launches; `None` for
/// any other event.
pub fn launch_of(t: &Trace, launch: u32) -> Option<LaunchOf> {
    if !t.is_graph_launch(launch as usize) {
        return None;
    }
    let calls = launches(t);
    let at = calls.iter().position(|&c| c == launch)?;
    let kernels = t
        .launches
        .iter()
        .filter(|l| l.launch == launch && is_kernel(t, l.gpu))
        .count() as u64;
    Some(LaunchOf {
        ordinal: at + 1,
        launches: calls.len(),
        kernels,
    })
}
