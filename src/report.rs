//! The analysis report: a versioned JSON document; its Markdown rendering is in `markdown`.
//!
//! This is the serialization boundary of the analysis: the model, windows, metrics and findings
//! carry no serde derives; the report copies what a reader needs into its own types.
//!
//! Format history: version 1 (first release): `trace`, `findings`, `steps`, `windows`.
//! Version 2: each window carries the window detector's `anomaly_probability` and
//! `predicted_type`; `unexplained` lists the windows it flags that no finding explains.
//! Version 3: findings claim exclusive time from the step attribution (`split`, per step and as
//! the steady-state mean), and carry their `gate` (the inputs of their confidence) and
//! `worst_steps`; observations without a time cost are `notes`, never ranked with findings.
//! Readers take versions 1 and 2 with those fields empty. Fields added since, optional (no new
//! version): `roofline`, `graphs`, `memory`, and `serving` (a serving capture's iterations by
//! kind), absent from other captures' reports.

mod markdown;
mod windows;

pub(crate) use markdown::md_code_cell;
pub use markdown::{is_hidden, md_code, md_fence, md_text, visible};
use serde::{Deserialize, Serialize};
pub(crate) use windows::evidence_windows;
pub use windows::{evidence_events, overlaps, FindingWindowEntry, MAX_FINDING_WINDOWS};

use crate::analysis::Analysis;
use crate::attribution::Part;
use crate::detect::{Detected, Finding};
use crate::features::{of_trace, WindowFeatures};
use crate::graphs::{self, GraphSummary};
use crate::memory;
use crate::metrics::{measure, pct};
use crate::ml::{self, Model};
use crate::roofline::{self, Roofline};
use crate::serving::Serving;
use crate::window::StepWindows;

/// The report format's name and version; readers check both.
pub const FORMAT: &str = "torchtraceap.report";
pub const VERSION: u32 = 3;

/// Why a saved report cannot be read; each message says what was found and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(
        "not a TorchTraceAP report: {0}. A saved report is the JSON that the app's \"Save the \
         report\" or `ttap analyze --format json` writes."
    )]
    NotAReport(serde_json::Error),
    #[error("not a TorchTraceAP report: its format is \"{0}\", not \"{FORMAT}\"")]
    OtherFormat(String),
    #[error(
        "this report was written by a newer TorchTraceAP (report version {0}; this one reads \
         versions 1 to {VERSION}): open it with a newer version"
    )]
    Newer(u32),
    #[error("a {FORMAT} version {version} document, but it is damaged or edited: {source}")]
    Damaged {
        version: u32,
        source: serde_json::Error,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub format: String,
    pub version: u32,
    /// `torchtraceap@<version>` that wrote it.
    pub exporter: String,
    pub trace: TraceFacts,
    /// Ranked by estimated time recoverable per step.
    pub findings: Vec<FindingEntry>,
    pub steps: Vec<StepEntry>,
    pub windows: Vec<WindowEntry>,
    /// Steady-state windows the window detector flags (probability above its threshold) that
    /// no finding explains (no finding of the predicted type concerns the step), most probable
    /// first: the regions to look at beyond the rules. Absent from version 1.
    #[serde(default)]
    pub unexplained: Vec<UnexplainedEntry>,
    /// Observations that are not ranked findings (no time estimate, or a gate that held too
    /// rarely or cost too little). Absent before version 3.
    #[serde(default)]
    pub notes: Vec<NoteEntry>,
    /// The steady-state mean of each step's time split on the main GPU, in attribution order;
    /// the parts sum to the mean step. Empty without GPU work, and before version 3.
    #[serde(default)]
    pub split: Vec<SplitEntry>,
    /// The main GPU's roofline and MFU (`roofline::analyze`); `None` without a GPU, and in
    /// reports written before it.
    #[serde(default)]
    pub roofline: Option<Roofline>,
    /// The CUDA/HIP graph launches and the kernels they replayed (`graphs::summarize`), per
    /// trace and per step; `None` without a graph launch, and in reports written before it.
    #[serde(default)]
    pub graphs: Option<GraphSummary>,
    /// The allocator's memory per device (`memory::Memory::summary`); no device without
    /// `[memory]` events; `None` in reports written before it.
    #[serde(default)]
    pub memory: Option<memory::MemorySummary>,
    /// A serving capture's iterations and their figures per kind (`serving::Serving`); absent
    /// from other captures' reports, and from reports written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving: Option<Serving>,
}

/// One part of a step's time ([`Part::id`]) and its length.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplitEntry {
    pub part: String,
    pub ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoteEntry {
    pub id: String,
    pub text: String,
}

/// A finding's gate and how it fared: the inputs of its confidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateEntry {
    pub quantity: String,
    #[serde(flatten)]
    pub figures: GateFigures,
}

/// A gate's figures: what a share link carries of it (the words are the detector's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateFigures {
    pub threshold: f64,
    pub held_steps: usize,
    pub steady_steps: usize,
    /// Median of the quantity over the steps where the gate holds.
    pub median: f64,
    /// `median / threshold`.
    pub margin: f64,
}

/// A step where a finding costs time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepCostEntry {
    pub step: i64,
    /// Time the finding explains in that step.
    pub ms: f64,
    /// The gated quantity in that step.
    pub value: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceFacts {
    pub era: String,
    pub devices: Vec<String>,
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    /// `profiler_steps`; without `ProfilerStep#` ranges, `repeated_annotations` or `repeated_ops`
    /// (a loop's iterations, `model::StepSource`), else `whole_trace` (one step).
    pub step_source: String,
    pub steady_steps: usize,
    pub warmup_steps: Vec<i64>,
    pub mean_step_ms: f64,
    /// The trace records the host alone (no GPU activity): findings claim host time. Absent
    /// (false) in older reports.
    #[serde(default)]
    pub cpu_only: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FindingEntry {
    pub id: String,
    pub title: String,
    pub summary: String,
    pub severity: String,
    pub impact_ms_per_step: f64,
    pub impact_pct_of_step: f64,
    pub impact_method: String,
    /// `held_steps / steady_steps` times a margin factor (0.5 at the threshold, 1 from twice
    /// it); its inputs are in `gate`.
    pub confidence: f32,
    /// Absent before version 3.
    #[serde(default)]
    pub gate: Option<GateEntry>,
    /// The steps where it costs most, worst first. Absent before version 3.
    #[serde(default)]
    pub worst_steps: Vec<StepCostEntry>,
    pub evidence: Vec<EvidenceEntry>,
    pub fix: String,
    pub fix_snippet: String,
    /// The module frame holding most of the evidence's time (`detect::Finding::module`):
    /// only where the trace has module frames and the evidence is kernels or ops; an optional
    /// field, absent in older reports (so no new version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// The windows that hold the finding's evidence, best first (`windows::evidence_windows`):
    /// what the timeline, the LLM request and a shared link point at. Absent in reports made
    /// before this field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<FindingWindowEntry>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvidenceEntry {
    pub what: String,
    pub steps: Vec<i64>,
    pub events: Vec<String>,
    pub count: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepEntry {
    pub number: i64,
    pub warmup: bool,
    pub duration_ms: f64,
    pub gpu_busy_pct: Option<f64>,
    pub idle_host_wait_ms: Option<f64>,
    pub idle_kernel_wait_ms: Option<f64>,
    pub(crate) idle_other_ms: Option<f64>,
    pub(crate) idle_before_first_gpu_work_ms: Option<f64>,
    pub kernels: u64,
    pub short_kernels: u64,
    pub launch_calls: u64,
    pub sync_calls: u64,
    pub(crate) item_calls: u64,
    pub(crate) dataloader_ms: f64,
    pub(crate) communication_ms: Option<f64>,
    pub(crate) communication_exposed_ms: Option<f64>,
    pub(crate) device_mallocs: u64,
    pub(crate) device_frees: u64,
    pub(crate) peak_allocated_bytes: Option<i64>,
    pub streams: Vec<StreamEntry>,
    /// The step's time split on the main GPU (parts with time only). Absent before version 3.
    #[serde(default)]
    pub split: Vec<SplitEntry>,
}

/// One GPU stream's time in a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamEntry {
    pub device: Option<i64>,
    pub stream: Option<i64>,
    pub compute_ms: f64,
    pub(crate) communication_ms: f64,
    pub(crate) memcpy_ms: f64,
    pub(crate) memset_ms: f64,
    pub idle_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowEntry {
    pub step: i64,
    pub phase: String,
    pub label: Option<String>,
    /// Milliseconds from the trace's first event.
    pub start_ms: f64,
    pub duration_ms: f64,
    pub gpu_busy_pct: Option<f64>,
    /// GPU time of the work launched from the window's CPU work, wherever it ran.
    pub(crate) launched_gpu_ms: f64,
    pub idle_host_wait_ms: Option<f64>,
    pub kernels: u64,
    pub short_kernels: u64,
    pub sync_calls: u64,
    pub(crate) communication_ms: Option<f64>,
    /// The window detector's probability that the window holds an anti-pattern; `None` on a
    /// trace without GPU work, outside the detector's domain (`ml::applies_to`).
    pub anomaly_probability: Option<f32>,
    /// The anti-pattern (a detector id) the window detector finds most likely, whatever the
    /// probability; `None` where the probability is.
    pub predicted_type: Option<String>,
}

/// A window the detector flags and no finding explains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnexplainedEntry {
    pub step: i64,
    pub phase: String,
    pub start_ms: f64,
    pub duration_ms: f64,
    pub anomaly_probability: f32,
    pub predicted_type: String,
}

/// Nanoseconds per millisecond.
const NS_PER_MS: f64 = 1e6;

impl Report {
    /// What the texts call a step: "iteration" in a serving capture.
    pub fn step_word(&self) -> &'static str {
        crate::serving::step_word(self.serving.as_ref())
    }

    /// The heading of the time split: "Where a step's time goes" ("an iteration's").
    pub fn split_heading(&self) -> String {
        match self.step_word() {
            "step" => "Where a step's time goes".to_string(),
            word => format!("Where an {word}'s time goes"),
        }
    }

    /// The windows that show finding `f`, as `(step, window)` indices, best first: those that
    /// hold its evidence (`windows::evidence_windows`, kept in its entry when the report was
    /// made); none for a finding this report does not hold.
    pub fn finding_windows(&self, a: &Analysis<'_>, f: &Finding) -> Vec<(usize, usize)> {
        let Some(entry) = self.findings.iter().find(|e| e.id == f.id) else {
            return Vec::new();
        };
        entry
            .windows
            .iter()
            .filter_map(|w| {
                let step = a.steps.steps.iter().position(|s| s.number == w.step)?;
                (w.window < a.steps.steps[step].windows.len()).then_some((step, w.window))
            })
            .collect()
    }

    /// The entries of step `step`'s windows (an index into `a.steps.steps`), in window order.
    pub(crate) fn step_windows(&self, a: &Analysis<'_>, step: usize) -> Option<&[WindowEntry]> {
        let count = a.steps.steps.get(step)?.windows.len();
        let first: usize = a.steps.steps[..step].iter().map(|s| s.windows.len()).sum();
        self.windows.get(first..first + count)
    }

    pub fn new(a: &Analysis<'_>, detected: &Detected) -> Report {
        let findings = &detected.findings;
        let t = a.trace;
        let origin = t.meta.span.map_or(0, |s| s.0);
        let range = |s: &StepWindows| (s.number, s.start, s.end);
        let steady_ranges: Vec<(i64, i64, i64)> =
            a.steady.iter().map(|&k| range(&a.steps.steps[k])).collect();
        let steps = a
            .steps
            .steps
            .iter()
            .zip(&a.step_metrics)
            .zip(&a.splits)
            .map(|((s, m), split)| {
                let d = m.main_device();
                StepEntry {
                    number: s.number,
                    warmup: s.warmup,
                    duration_ms: s.dur() as f64 / NS_PER_MS,
                    gpu_busy_pct: d.map(|d| pct(d.busy, m.dur())),
                    idle_host_wait_ms: d.map(|d| d.idle_host_wait as f64 / NS_PER_MS),
                    idle_kernel_wait_ms: d.map(|d| d.idle_kernel_wait as f64 / NS_PER_MS),
                    idle_other_ms: d.map(|d| d.idle_other as f64 / NS_PER_MS),
                    idle_before_first_gpu_work_ms: d
                        .map(|d| d.before_first_work as f64 / NS_PER_MS),
                    kernels: m.kernels,
                    short_kernels: m.short_kernels,
                    launch_calls: m.launch_calls,
                    sync_calls: m.sync_calls,
                    item_calls: m.item_calls,
                    dataloader_ms: m.dataloader_ns as f64 / NS_PER_MS,
                    communication_ms: d.map(|d| d.communication as f64 / NS_PER_MS),
                    communication_exposed_ms: d.map(|d| d.communication_exposed as f64 / NS_PER_MS),
                    device_mallocs: m.mallocs,
                    device_frees: m.frees,
                    peak_allocated_bytes: m.peak_allocated,
                    streams: m
                        .streams
                        .iter()
                        .map(|st| StreamEntry {
                            device: st.device,
                            stream: st.stream,
                            compute_ms: st.compute as f64 / NS_PER_MS,
                            communication_ms: st.communication as f64 / NS_PER_MS,
                            memcpy_ms: st.memcpy as f64 / NS_PER_MS,
                            memset_ms: st.memset as f64 / NS_PER_MS,
                            idle_ms: st.idle as f64 / NS_PER_MS,
                        })
                        .collect(),
                    split: Part::ALL
                        .iter()
                        .filter(|&&p| split.ns(p) > 0)
                        .map(|&p| SplitEntry {
                            part: p.id().to_string(),
                            ms: split.ns(p) as f64 / NS_PER_MS,
                        })
                        .collect(),
                }
            })
            .collect();
        let steady = a.steady.len().max(1) as f64;
        let split: Vec<SplitEntry> = if a.splits.iter().any(|s| s.has_gpu()) {
            Part::ALL
                .iter()
                .map(|&p| SplitEntry {
                    part: p.id().to_string(),
                    ms: a
                        .steady
                        .iter()
                        .map(|&k| a.splits[k].ns(p) as f64)
                        .sum::<f64>()
                        / steady
                        / NS_PER_MS,
                })
                .collect()
        } else {
            Vec::new()
        };
        let windows: Vec<WindowEntry> = a
            .steps
            .windows()
            .map(|w| {
                let m = measure(t, w.start, w.end);
                WindowEntry {
                    step: a.steps.steps[w.step].number,
                    phase: w.phase.label().to_string(),
                    label: w.label.clone(),
                    start_ms: (w.start - origin) as f64 / NS_PER_MS,
                    duration_ms: (w.end - w.start) as f64 / NS_PER_MS,
                    gpu_busy_pct: m.main_device().map(|d| pct(d.busy, m.dur())),
                    launched_gpu_ms: a
                        .steps
                        .launched_in(w)
                        .map(|g| t.events.dur[g as usize])
                        .sum::<i64>() as f64
                        / NS_PER_MS,
                    idle_host_wait_ms: m.main_device().map(|d| d.idle_host_wait as f64 / NS_PER_MS),
                    kernels: m.kernels,
                    short_kernels: m.short_kernels,
                    sync_calls: m.sync_calls,
                    communication_ms: m.main_device().map(|d| d.communication as f64 / NS_PER_MS),
                    anomaly_probability: None,
                    predicted_type: None,
                }
            })
            .collect();
        let mut report = Report {
            format: FORMAT.to_string(),
            version: VERSION,
            exporter: format!("torchtraceap@{}", env!("CARGO_PKG_VERSION")),
            trace: TraceFacts {
                era: t.meta.era.label().to_string(),
                devices: t
                    .meta
                    .devices
                    .iter()
                    .filter_map(|d| d.name.clone())
                    .filter(|n| !n.is_empty())
                    .collect(),
                rank: t.meta.rank,
                world_size: t.meta.world_size,
                step_source: a.steps.source.label().to_string(),
                steady_steps: a.steady.len(),
                warmup_steps: a
                    .steps
                    .steps
                    .iter()
                    .filter(|s| s.warmup)
                    .map(|s| s.number)
                    .collect(),
                mean_step_ms: a.step_ns() / NS_PER_MS,
                cpu_only: a.cpu_only,
            },
            findings: findings
                .iter()
                .map(|f| FindingEntry {
                    id: f.id.to_string(),
                    title: f.title.to_string(),
                    summary: f.summary.clone(),
                    severity: f.severity.label().to_string(),
                    impact_ms_per_step: f.impact.ms_per_step,
                    impact_pct_of_step: f.impact.pct_of_step,
                    impact_method: f.impact.method.to_string(),
                    confidence: f.confidence,
                    gate: Some(GateEntry {
                        quantity: f.gate.gate.quantity.to_string(),
                        figures: GateFigures {
                            threshold: f.gate.gate.threshold,
                            held_steps: f.gate.held_steps,
                            steady_steps: f.gate.steady_steps,
                            median: f.gate.median,
                            margin: f.gate.margin,
                        },
                    }),
                    worst_steps: f
                        .worst_steps()
                        .iter()
                        .map(|c| StepCostEntry {
                            step: c.number,
                            ms: c.ms,
                            value: c.value,
                        })
                        .collect(),
                    evidence: f
                        .evidence
                        .iter()
                        .map(|e| EvidenceEntry {
                            what: e.what.clone(),
                            steps: e.steps.clone(),
                            events: e.events.clone(),
                            count: e.count,
                        })
                        .collect(),
                    module: f.module.clone(),
                    windows: evidence_windows(a, f).into_iter().map(|w| w.2).collect(),
                    fix: f.fix.summary.to_string(),
                    fix_snippet: f.fix.snippet.to_string(),
                })
                .collect(),
            steps,
            windows,
            unexplained: Vec::new(),
            notes: detected
                .notes
                .iter()
                .map(|n| NoteEntry {
                    id: n.id.to_string(),
                    text: n.text.clone(),
                })
                .collect(),
            split,
            roofline: roofline::analyze(t, a.main_device, &steady_ranges),
            graphs: graphs::summarize(t, &a.steps.steps.iter().map(range).collect::<Vec<_>>()),
            memory: Some(a.memory.summary(t, &steady_ranges)),
            serving: a.serving.clone(),
        };
        report.score_windows(a, findings, Model::embedded(), &of_trace(t, &a.steps));
        report
    }

    /// Scores the windows with `model` (their features: `features::of_trace`), and lists the
    /// steady-state windows it flags that no finding explains: what [`Report::new`] does with
    /// the embedded model, and the web app again with a model retrained on the user's labels.
    pub fn score_windows(
        &mut self,
        a: &Analysis<'_>,
        findings: &[Finding],
        model: &Model,
        features: &[WindowFeatures],
    ) {
        let scored = ml::applies_to(a.trace);
        for (e, f) in self.windows.iter_mut().zip(features) {
            let score = scored.then(|| model.score(&f.values));
            e.anomaly_probability = score.map(|s| s.probability);
            e.predicted_type = score.map(|s| s.kind.to_string());
        }
        let mut unexplained: Vec<UnexplainedEntry> = a
            .steps
            .windows()
            .zip(&self.windows)
            .filter(|(w, _)| !a.steps.steps[w.step].warmup)
            .filter_map(|(_, e)| {
                let (p, kind) = (e.anomaly_probability?, e.predicted_type.as_deref()?);
                let explained = findings.iter().any(|f| f.id == kind && f.cites(e.step));
                (model.flags(p) && !explained).then(|| UnexplainedEntry {
                    step: e.step,
                    phase: e.phase.clone(),
                    start_ms: e.start_ms,
                    duration_ms: e.duration_ms,
                    anomaly_probability: p,
                    predicted_type: kind.to_string(),
                })
            })
            .collect();
        unexplained.sort_by(|x, y| y.anomaly_probability.total_cmp(&x.anomaly_probability));
        self.unexplained = unexplained;
    }

    /// Reads a saved report of this version or an older one, saying what is wrong otherwise.
    pub fn from_json(text: &str) -> Result<Report, ReportError> {
        #[derive(Deserialize)]
        struct Head {
            format: String,
            version: u32,
        }
        let head: Head = serde_json::from_str(text).map_err(ReportError::NotAReport)?;
        if head.format != FORMAT {
            return Err(ReportError::OtherFormat(head.format));
        }
        if head.version > VERSION {
            return Err(ReportError::Newer(head.version));
        }
        serde_json::from_str(text).map_err(|source| ReportError::Damaged {
            version: head.version,
            source,
        })
    }
}
