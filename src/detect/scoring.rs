//! The rule detectors scored against hand-labelled real traces (`models/real-labels.json`,
//! decided as `docs/LABELS.md` says): per detector, precision and recall over the traces where a
//! label judges it; the findings on healthy controls; the largest share of a step that a trace's
//! findings claim. Used by `ttap eval-rules` and by the test that regenerates the committed
//! table (`models/RULES.md`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;

use super::{run, Analysis, DETECTORS};
use crate::ingest::{ingest_reader, IngestOptions, Ingested};

/// The label file's format name and the version read here.
pub const LABELS_FORMAT: &str = "torchtraceap.real-labels";
pub const LABELS_VERSION: u32 = 1;

/// Targets the issue sets: every detector that fires on the set at this precision or better…
pub const TARGET_PRECISION: f64 = 0.9;
/// …and this recall over all present labels together.
pub const TARGET_RECALL: f64 = 0.8;

#[derive(Clone, Debug, Deserialize)]
pub struct RealLabels {
    pub format: String,
    pub version: u32,
    pub traces: Vec<LabelledTrace>,
}

/// One trace's labels: detector id → the reason, citing figures.
#[derive(Clone, Debug, Deserialize)]
pub struct LabelledTrace {
    /// Path relative to the shared traces folder.
    pub trace: String,
    pub workload: String,
    pub healthy_control: bool,
    #[serde(default)]
    pub present: BTreeMap<String, String>,
    #[serde(default)]
    pub absent: BTreeMap<String, String>,
}

/// Why the labels could not be read, or a labelled trace could not be scored.
#[derive(Debug, thiserror::Error)]
pub enum ScoringError {
    #[error("not a real-trace label file: {0}")]
    NotLabels(serde_json::Error),
    #[error(
        "a label file of format \"{format}\" version {version}, expected \"{LABELS_FORMAT}\" \
         version {LABELS_VERSION}"
    )]
    OtherFormat { format: String, version: u32 },
    #[error(
        "labelled trace {} cannot be opened: {source}; point the traces option (--traces of \
         eval-rules, --real of eval) or TTAP_SHARED_TRACES at the shared traces folder",
        path.display()
    )]
    Missing {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("labelled trace {} cannot be read: {source}", path.display())]
    Unreadable {
        path: std::path::PathBuf,
        source: crate::ingest::IngestError,
    },
}

impl RealLabels {
    pub fn from_json(text: &str) -> Result<RealLabels, ScoringError> {
        let labels: RealLabels = serde_json::from_str(text).map_err(ScoringError::NotLabels)?;
        if labels.format != LABELS_FORMAT || labels.version != LABELS_VERSION {
            return Err(ScoringError::OtherFormat {
                format: labels.format,
                version: labels.version,
            });
        }
        Ok(labels)
    }
}

/// What the detectors said about one labelled trace.
#[derive(Clone, Debug)]
pub struct TraceResult {
    pub trace: String,
    /// Ids of the findings (not notes).
    pub fired: Vec<String>,
    /// Sum of the findings' shares of the mean step, in percent.
    pub findings_pct: f64,
    /// Most time claimed in one steady step, as a share of that step, in percent.
    pub max_step_claimed_pct: f64,
}

/// One detector's confusion counts over the traces that judge it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DetectorScore {
    pub id: String,
    pub true_positives: usize,
    pub false_positives: usize,
    pub false_negatives: usize,
    pub true_negatives: usize,
    /// Traces where it fired on an id the labels leave unjudged.
    pub unjudged_fired: usize,
    /// The traces behind each false positive and false negative.
    pub wrong: Vec<String>,
}

impl DetectorScore {
    pub fn precision(&self) -> Option<f64> {
        let fired = self.true_positives + self.false_positives;
        (fired > 0).then(|| self.true_positives as f64 / fired as f64)
    }

    pub fn recall(&self) -> Option<f64> {
        let present = self.true_positives + self.false_negatives;
        (present > 0).then(|| self.true_positives as f64 / present as f64)
    }
}

/// The whole table.
#[derive(Clone, Debug, Default)]
pub struct Scores {
    pub detectors: Vec<DetectorScore>,
    pub traces: usize,
    /// Findings on healthy controls: (trace, ids).
    pub healthy_findings: Vec<(String, Vec<String>)>,
    pub healthy_controls: usize,
    /// The largest `findings_pct` and `max_step_claimed_pct` over the traces, with the trace.
    pub max_findings_pct: (f64, String),
    pub max_step_claimed_pct: (f64, String),
}

impl Scores {
    /// Recall over every present label together.
    pub fn overall_recall(&self) -> Option<f64> {
        let tp: usize = self.detectors.iter().map(|d| d.true_positives).sum();
        let present: usize = self
            .detectors
            .iter()
            .map(|d| d.true_positives + d.false_negatives)
            .sum();
        (present > 0).then(|| tp as f64 / present as f64)
    }

    /// Each target the table misses, in words; empty when all are met.
    pub fn missed_targets(&self) -> Vec<String> {
        let mut missed = Vec::new();
        for d in &self.detectors {
            if let Some(p) = d.precision().filter(|&p| p < TARGET_PRECISION) {
                let fired: Vec<&str> = d
                    .wrong
                    .iter()
                    .filter_map(|w| w.strip_prefix("fired on "))
                    .collect();
                missed.push(format!(
                    "{}: precision {p:.2} < {TARGET_PRECISION} (false positives: {})",
                    d.id,
                    fired.join(", ")
                ));
            }
        }
        if let Some(r) = self.overall_recall().filter(|&r| r < TARGET_RECALL) {
            missed.push(format!("overall recall {r:.2} < {TARGET_RECALL}"));
        }
        for (trace, ids) in &self.healthy_findings {
            missed.push(format!("healthy control {trace} has findings {ids:?}"));
        }
        if self.max_step_claimed_pct.0 > 100.0 + 1e-6 {
            missed.push(format!(
                "findings claim {:.1}% of a step of {}",
                self.max_step_claimed_pct.0, self.max_step_claimed_pct.1
            ));
        }
        missed
    }
}

/// Ingests every labelled trace under `dir`, runs the detectors and scores them.
/// Reads the labelled trace `trace` (a path relative to the shared traces folder `dir`).
pub fn read_labelled(dir: &Path, trace: &str) -> Result<Ingested, ScoringError> {
    let path = dir.join(trace);
    let file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(source) => return Err(ScoringError::Missing { path, source }),
    };
    ingest_reader(file, IngestOptions::default(), 4 << 20, |_| {})
        .map_err(|source| ScoringError::Unreadable { path, source })
}

pub fn evaluate(labels: &RealLabels, dir: &Path) -> Result<Scores, ScoringError> {
    let mut results = Vec::new();
    for l in &labels.traces {
        let ingested = read_labelled(dir, &l.trace)?;
        let a = Analysis::new(&ingested.trace);
        let detected = run(&a);
        results.push(TraceResult {
            trace: l.trace.clone(),
            fired: detected.findings.iter().map(|f| f.id.to_string()).collect(),
            findings_pct: detected.findings.iter().map(|f| f.impact.pct_of_step).sum(),
            max_step_claimed_pct: detected.max_step_claimed_pct,
        });
    }
    let ids: Vec<&str> = DETECTORS.iter().map(|d| d.id()).collect();
    Ok(score(labels, &results, &ids))
}

/// Scores `results` (one per labelled trace, any order) for the detector ids `ids`.
pub fn score(labels: &RealLabels, results: &[TraceResult], ids: &[&str]) -> Scores {
    let mut scores = Scores {
        detectors: ids
            .iter()
            .map(|id| DetectorScore {
                id: id.to_string(),
                ..DetectorScore::default()
            })
            .collect(),
        traces: results.len(),
        ..Scores::default()
    };
    for r in results {
        let Some(l) = labels.traces.iter().find(|l| l.trace == r.trace) else {
            continue;
        };
        for d in &mut scores.detectors {
            let fired = r.fired.contains(&d.id);
            match (
                l.present.contains_key(&d.id),
                l.absent.contains_key(&d.id),
                fired,
            ) {
                (true, _, true) => d.true_positives += 1,
                (true, _, false) => {
                    d.false_negatives += 1;
                    d.wrong.push(format!("missed on {}", r.trace));
                }
                (false, true, true) => {
                    d.false_positives += 1;
                    d.wrong.push(format!("fired on {}", r.trace));
                }
                (false, true, false) => d.true_negatives += 1,
                (false, false, true) => d.unjudged_fired += 1,
                (false, false, false) => {}
            }
        }
        if l.healthy_control {
            scores.healthy_controls += 1;
            if !r.fired.is_empty() {
                scores
                    .healthy_findings
                    .push((r.trace.clone(), r.fired.clone()));
            }
        }
        if r.findings_pct > scores.max_findings_pct.0 {
            scores.max_findings_pct = (r.findings_pct, r.trace.clone());
        }
        if r.max_step_claimed_pct > scores.max_step_claimed_pct.0 {
            scores.max_step_claimed_pct = (r.max_step_claimed_pct, r.trace.clone());
        }
    }
    scores
}

fn ratio(x: Option<f64>) -> String {
    x.map_or("–".into(), |x| format!("{x:.2}"))
}

/// The committed table, in Markdown; `command` is what regenerates it.
pub fn markdown(s: &Scores, command: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# The rule detectors on hand-labelled real traces\n\n\
         Generated by `{command}`; do not edit by hand (a test regenerates it and fails when a \
         figure misses its target). Data: **real** traces of `../shared/traces`, labelled in \
         `models/real-labels.json` as `docs/LABELS.md` explains (labels measured from the raw \
         JSON by `scripts/label_figures.py`, not by this tool).\n\n\
         {} labelled traces, {} healthy controls. A detector counts on a trace only where the \
         labels judge it (present or absent); unjudged ids are left out of precision and recall.\n\n\
         Targets: precision ≥ {TARGET_PRECISION} for every detector that fires, recall ≥ \
         {TARGET_RECALL} overall, no finding on a healthy control, findings never past the step.\n",
        s.traces, s.healthy_controls
    );
    let _ = writeln!(
        o,
        "| detector | TP | FP | FN | TN | fired where unjudged | precision | recall |\n|---|---|---|---|---|---|---|---|"
    );
    for d in &s.detectors {
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            d.id,
            d.true_positives,
            d.false_positives,
            d.false_negatives,
            d.true_negatives,
            d.unjudged_fired,
            ratio(d.precision()),
            ratio(d.recall())
        );
    }
    let _ = writeln!(
        o,
        "\nOverall recall: **{}**. Findings on healthy controls: **{}**. Largest sum of a \
         trace's findings: **{:.1}%** of the mean step (`{}`); most time claimed in one step: \
         **{:.1}%** of that step (`{}`).\n",
        ratio(s.overall_recall()),
        s.healthy_findings.len(),
        s.max_findings_pct.0,
        s.max_findings_pct.1,
        s.max_step_claimed_pct.0,
        s.max_step_claimed_pct.1
    );
    let missed = s.missed_targets();
    if missed.is_empty() {
        let _ = writeln!(o, "Every target is met.");
    } else {
        let _ = writeln!(o, "Targets missed:\n");
        for m in missed {
            let _ = writeln!(o, "- {m}");
        }
    }
    let wrong: Vec<String> = s
        .detectors
        .iter()
        .flat_map(|d| d.wrong.iter().map(move |w| format!("- `{}` {w}", d.id)))
        .collect();
    if !wrong.is_empty() {
        let _ = writeln!(
            o,
            "\nDisagreements with the labels (each is a place to look: the detector, or the label):\n\n{}",
            wrong.join("\n")
        );
    }
    o
}
