//! What a link of format 2 holds ([`Facts`]): figures, references and ids, never prose; and
//! how a report becomes facts ([`Facts::of`]) and facts a report again ([`Facts::render`]),
//! its titles, explanations and fixes written from this version's catalogue.

use serde::{Deserialize, Serialize};

use super::{quoted, Omitted, ShareError, SharedReport, TimeRange, FORMAT, VERSION};
use crate::detect::{self, Severity};
use crate::report::{
    self, EvidenceEntry, FindingEntry, FindingWindowEntry, GateEntry, GateFigures, NoteEntry,
    Report, SplitEntry, StepCostEntry, StepEntry, TraceFacts, UnexplainedEntry, WindowEntry,
};
use crate::roofline::Roofline;
use crate::serving::{KindFigures, Serving};

/// A finding's evidence windows a link carries, at most (the best first).
const WINDOWS_PER_FINDING: usize = 3;

/// What a link of format 2 holds: figures, references and ids; no prose.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Facts {
    format: String,
    version: u32,
    fingerprint: String,
    /// The version of the report format the figures follow.
    pub(super) report_version: u32,
    /// `torchtraceap@<version>` that made the report.
    exporter: String,
    trace: TraceFacts,
    findings: Vec<FindingFacts>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    steps: Vec<StepEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    windows: Vec<WindowEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    unexplained: Vec<UnexplainedEntry>,
    /// The ids of the report's notes (their words come from the page's catalogue).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
    /// The step split: part ids (`attribution::Part::id`) and milliseconds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    split: Vec<SplitEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    omitted: Vec<Omitted>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    selected_finding: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    selected_range: Option<TimeRange>,
    /// The step MFU (steady-state mean) where FLOPs were counted; links before it have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mfu: Option<f64>,
    /// Where the MFU is a lower bound, the share of kernel time in matrix kernels without FLOPs
    /// counted (`Roofline::mfu_uncounted`); links before it have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mfu_uncounted: Option<f64>,
    /// A serving capture's figures per kind of iteration (figures and kinds, no text; not each
    /// iteration); links before it, and of other captures, have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    serving: Option<Vec<KindFigures>>,
}

/// A finding as a link holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct FindingFacts {
    /// The detector's id.
    id: String,
    /// Which of the detector's fixes (`Detector::fixes`) applies.
    #[serde(default, skip_serializing_if = "is_zero")]
    fix: usize,
    /// `high`, `medium` or `low`; anything else reads as the severity of the impact.
    severity: String,
    impact_ms_per_step: f64,
    impact_pct_of_step: f64,
    confidence: f32,
    /// The gate's figures (its words are the detector's `threshold`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gate: Option<GateFigures>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    worst_steps: Vec<StepCostEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    evidence: Vec<EvidenceFacts>,
    /// The module frame holding most of the evidence's time (a path of frame names: data,
    /// shown quoted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    module: Option<String>,
    /// The best of the windows that hold its evidence (at most [`WINDOWS_PER_FINDING`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    windows: Vec<FindingWindowEntry>,
}

/// Evidence as a link holds it: where, how many, which events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct EvidenceFacts {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    steps: Vec<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    events: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    count: Option<u64>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What the page writes as the evidence's description: the link's or the file's own is prose, left
/// out.
const EVIDENCE_WHAT: &str = "recorded in the trace";

impl Facts {
    /// The facts of `shared`: its prose dropped, each fix named by its place in the catalogue
    /// (the first where the text is not the catalogue's).
    pub(super) fn of(shared: &SharedReport) -> Facts {
        let r = &shared.report;
        Facts {
            format: FORMAT.to_string(),
            version: VERSION,
            fingerprint: shared.fingerprint.clone(),
            report_version: r.version,
            exporter: r.exporter.clone(),
            trace: r.trace.clone(),
            findings: r
                .findings
                .iter()
                .map(|f| FindingFacts {
                    id: f.id.clone(),
                    fix: detect::detector(&f.id)
                        .and_then(|d| d.fixes().iter().position(|x| x.summary == f.fix))
                        .unwrap_or(0),
                    severity: f.severity.clone(),
                    impact_ms_per_step: f.impact_ms_per_step,
                    impact_pct_of_step: f.impact_pct_of_step,
                    confidence: f.confidence,
                    gate: f.gate.as_ref().map(|g| g.figures.clone()),
                    worst_steps: f.worst_steps.clone(),
                    evidence: f
                        .evidence
                        .iter()
                        .map(|e| EvidenceFacts {
                            steps: e.steps.clone(),
                            events: e.events.clone(),
                            count: e.count,
                        })
                        .collect(),
                    module: f.module.clone(),
                    windows: f
                        .windows
                        .iter()
                        .take(WINDOWS_PER_FINDING)
                        .cloned()
                        .collect(),
                })
                .collect(),
            steps: r.steps.clone(),
            windows: r.windows.clone(),
            unexplained: r.unexplained.clone(),
            notes: r.notes.iter().map(|n| n.id.clone()).collect(),
            split: r.split.clone(),
            omitted: shared.omitted.clone(),
            selected_finding: shared.selected_finding.clone(),
            selected_range: shared.selected_range,
            mfu: r.roofline.as_ref().and_then(Roofline::measured_mfu),
            mfu_uncounted: r.roofline.as_ref().and_then(|x| x.mfu_uncounted),
            serving: r.serving.as_ref().map(|s| s.kinds.clone()),
        }
    }

    /// The report the page shows for these facts: the catalogue's words with the link's numbers.
    pub(super) fn render(&self) -> Result<SharedReport, ShareError> {
        let known = |id: &str, place: String| {
            detect::detector(id).ok_or_else(|| ShareError::UnknownDetector {
                id: quoted(id),
                place,
            })
        };
        let findings = self
            .findings
            .iter()
            .enumerate()
            .map(|(k, f)| {
                let d = known(&f.id, format!("finding {}", k + 1))?;
                let fix = d.fixes().get(f.fix).unwrap_or(&d.fixes()[0]);
                Ok(FindingEntry {
                    id: d.id().to_string(),
                    title: d.title().to_string(),
                    summary: format!(
                        "About {:.2} ms per step ({:.1}% of the step) could be recovered, by the \
                         figures in this analysis. The rule: {}",
                        f.impact_ms_per_step,
                        f.impact_pct_of_step,
                        d.threshold()
                    ),
                    severity: [Severity::High, Severity::Medium, Severity::Low]
                        .into_iter()
                        .find(|s| s.label() == f.severity)
                        .unwrap_or_else(|| Severity::of(f.impact_pct_of_step))
                        .label()
                        .to_string(),
                    impact_ms_per_step: f.impact_ms_per_step,
                    impact_pct_of_step: f.impact_pct_of_step,
                    impact_method:
                        "as estimated when the analysis was made (`ttap analyze --list` \
                                    describes each detector)"
                            .to_string(),
                    confidence: f.confidence.clamp(0.0, 1.0),
                    gate: f.gate.as_ref().map(|g| GateEntry {
                        quantity: d.threshold(),
                        figures: g.clone(),
                    }),
                    worst_steps: f.worst_steps.clone(),
                    evidence: f
                        .evidence
                        .iter()
                        .map(|e| EvidenceEntry {
                            what: EVIDENCE_WHAT.to_string(),
                            steps: e.steps.clone(),
                            events: e.events.iter().map(|n| quoted(n)).collect(),
                            count: e.count,
                        })
                        .collect(),
                    fix: fix.summary.to_string(),
                    fix_snippet: fix.snippet.to_string(),
                    module: f.module.as_deref().map(quoted),
                    windows: f
                        .windows
                        .iter()
                        .map(|w| FindingWindowEntry {
                            phase: quoted(&w.phase),
                            ..w.clone()
                        })
                        .collect(),
                })
            })
            .collect::<Result<Vec<_>, ShareError>>()?;
        let mut windows = self.windows.clone();
        for (k, w) in windows.iter_mut().enumerate() {
            if let Some(kind) = &w.predicted_type {
                w.predicted_type = Some(known(kind, format!("window {}", k + 1))?.id().to_string());
            }
            w.phase = quoted(&w.phase);
            w.label = w.label.as_deref().map(quoted);
        }
        let mut unexplained = self.unexplained.clone();
        for (k, u) in unexplained.iter_mut().enumerate() {
            let place = format!("unexplained region {}", k + 1);
            u.predicted_type = known(&u.predicted_type, place)?.id().to_string();
            u.phase = quoted(&u.phase);
        }
        let notes = self
            .notes
            .iter()
            .enumerate()
            .map(|(k, id)| {
                let title = detect::observer(id)
                    .map(|o| o.about().title)
                    .or_else(|| detect::detector(id).map(|d| d.title()))
                    .ok_or_else(|| ShareError::UnknownDetector {
                        id: quoted(id),
                        place: format!("note {}", k + 1),
                    })?;
                Ok(NoteEntry {
                    id: id.clone(),
                    text: format!(
                        "{title} (seen in the shared analysis; drop the trace for the figures)"
                    ),
                })
            })
            .collect::<Result<Vec<_>, ShareError>>()?;
        let known_parts = |split: &[SplitEntry]| -> Vec<SplitEntry> {
            split
                .iter()
                .filter(|p| {
                    crate::attribution::Part::ALL
                        .iter()
                        .any(|q| q.id() == p.part)
                })
                .cloned()
                .collect()
        };
        let split = known_parts(&self.split);
        // Each step's split too: a part id is shown as is, so only the catalogue's are kept.
        let steps = self
            .steps
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s.split = known_parts(&s.split);
                s
            })
            .collect();
        let mut trace = self.trace.clone();
        trace.era = quoted(&trace.era);
        trace.step_source = quoted(&trace.step_source);
        trace.devices = trace.devices.iter().map(|d| quoted(d)).collect();
        let selected_finding = self
            .selected_finding
            .as_ref()
            .filter(|id| findings.iter().any(|f| &f.id == *id))
            .cloned();
        Ok(SharedReport {
            format: FORMAT.to_string(),
            version: VERSION,
            fingerprint: quoted(&self.fingerprint),
            report: Report {
                format: report::FORMAT.to_string(),
                version: self.report_version,
                exporter: quoted(&self.exporter),
                trace,
                findings,
                steps,
                windows,
                unexplained,
                notes,
                split,
                roofline: self.mfu.map(|m| Roofline::carried(m, self.mfu_uncounted)),
                graphs: None,
                memory: None,
                serving: self.serving.clone().map(|kinds| Serving {
                    kinds,
                    iterations: Vec::new(),
                }),
            },
            omitted: self
                .omitted
                .iter()
                .map(|o| Omitted {
                    part: o.part,
                    count: o.count,
                    ids: o.ids.iter().map(|id| quoted(id)).collect(),
                })
                .collect(),
            selected_finding,
            selected_range: self.selected_range,
        })
    }
}
