//! The rule detectors scored against labelled real traces (`models/real-labels.json`, decided
//! as `docs/LABELS.md` says), in two tables, one per way the labels were made
//! ([`LabelSet`]): per detector, precision and recall over the traces where a label judges it;
//! the findings on healthy controls; the largest share of a step that a trace's findings claim.
//! Used by `ttap-dev eval-rules` and by the test that regenerates the committed table
//! (`models/RULES.md`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;

use super::registry::{run, DETECTORS};
use crate::analysis::Analysis;
use crate::ingest::{ingest_reader, IngestOptions, Ingested};

/// The label file's format name and the version read here.
pub(crate) const LABELS_FORMAT: &str = "torchtraceap.real-labels";
pub(crate) const LABELS_VERSION: u32 = 1;

/// Targets the issue sets: every detector that fires on the set at this precision or better…
pub(crate) const TARGET_PRECISION: f64 = 0.9;
/// …and this recall over all present labels together (figures-rubric table)…
pub(crate) const TARGET_RECALL: f64 = 0.8;
/// …and this recall per detector (the independent table, reported, not yet asserted).
pub(crate) const TARGET_DETECTOR_RECALL: f64 = 0.85;

/// The two ways the labels were made; each is scored in its own table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelSet {
    /// `present`/`absent`: measured with the quantities the gates measure
    /// (`scripts/label_figures.py` + `scripts/apply_rubric.py`, method "figures-rubric").
    Rubric,
    /// `independent`: from other statistics with other thresholds
    /// (`scripts/label_independent.py`, method "independent-script"), or from the source
    /// code of the trace's repository (method "source").
    Independent,
}

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
    /// The second label set: detector id → label, with the way it was made.
    #[serde(default)]
    pub independent: BTreeMap<String, IndependentLabel>,
}

/// One label of the second set.
#[derive(Clone, Debug, Deserialize)]
pub struct IndependentLabel {
    pub label: Verdict,
    /// "independent-script" or "source".
    pub method: String,
    /// The figures behind it, in words.
    #[serde(default)]
    pub reason: String,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Present,
    Absent,
}

impl LabelledTrace {
    /// What `set` says of detector `id` here (`None`: unjudged), with the label's reason.
    pub fn verdict(&self, set: LabelSet, id: &str) -> Option<(Verdict, &str)> {
        match set {
            LabelSet::Rubric => self
                .present
                .get(id)
                .map(|r| (Verdict::Present, r.as_str()))
                .or_else(|| self.absent.get(id).map(|r| (Verdict::Absent, r.as_str()))),
            LabelSet::Independent => self
                .independent
                .get(id)
                .map(|l| (l.label, l.reason.as_str())),
        }
    }

    /// Whether `set` judges any detector on this trace (traces it does not are left out of
    /// its table; a file that is not a trace carries no label of either set).
    pub fn judged_by(&self, set: LabelSet) -> bool {
        match set {
            LabelSet::Rubric => !self.present.is_empty() || !self.absent.is_empty(),
            LabelSet::Independent => !self.independent.is_empty(),
        }
    }
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
    pub(crate) healthy_findings: Vec<(String, Vec<String>)>,
    pub healthy_controls: usize,
    /// The largest `findings_pct` and `max_step_claimed_pct` over the traces, with the trace.
    pub(crate) max_findings_pct: (f64, String),
    pub max_step_claimed_pct: (f64, String),
}

impl Scores {
    /// Recall over every present label together.
    pub(crate) fn overall_recall(&self) -> Option<f64> {
        let tp: usize = self.detectors.iter().map(|d| d.true_positives).sum();
        let present: usize = self
            .detectors
            .iter()
            .map(|d| d.true_positives + d.false_negatives)
            .sum();
        (present > 0).then(|| tp as f64 / present as f64)
    }

    /// Each detector that fires below [`TARGET_PRECISION`] or has present labels and a recall
    /// below [`TARGET_DETECTOR_RECALL`], in words (the independent table's targets).
    pub(crate) fn missed_detector_targets(&self) -> Vec<String> {
        self.detectors
            .iter()
            .flat_map(|d| {
                let p = d.precision().filter(|&p| p < TARGET_PRECISION);
                let r = d.recall().filter(|&r| r < TARGET_DETECTOR_RECALL);
                p.map(|p| format!("{}: precision {p:.2} < {TARGET_PRECISION}", d.id))
                    .into_iter()
                    .chain(r.map(|r| format!("{}: recall {r:.2} < {TARGET_DETECTOR_RECALL}", d.id)))
            })
            .collect()
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

/// Both tables: the detectors scored against each label set.
#[derive(Clone, Debug)]
pub struct Evaluation {
    pub rubric: Scores,
    pub independent: Scores,
}

/// Ingests every labelled trace under `dir` that either set judges, runs the detectors once
/// and scores them against both sets.
pub fn evaluate(labels: &RealLabels, dir: &Path) -> Result<Evaluation, ScoringError> {
    let mut results = Vec::new();
    for l in labels
        .traces
        .iter()
        .filter(|l| l.judged_by(LabelSet::Rubric) || l.judged_by(LabelSet::Independent))
    {
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
    Ok(Evaluation {
        rubric: score(labels, &results, &ids, LabelSet::Rubric),
        independent: score(labels, &results, &ids, LabelSet::Independent),
    })
}

/// Scores `results` (one per labelled trace, any order) for the detector ids `ids` against the
/// labels of `set`; traces `set` does not judge are left out.
pub fn score(labels: &RealLabels, results: &[TraceResult], ids: &[&str], set: LabelSet) -> Scores {
    let mut scores = Scores {
        detectors: ids
            .iter()
            .map(|id| DetectorScore {
                id: id.to_string(),
                ..DetectorScore::default()
            })
            .collect(),
        ..Scores::default()
    };
    for r in results {
        let Some(l) = labels
            .traces
            .iter()
            .find(|l| l.trace == r.trace && l.judged_by(set))
        else {
            continue;
        };
        scores.traces += 1;
        for d in &mut scores.detectors {
            let fired = r.fired.contains(&d.id);
            // The independent table names the label's figures beside each disagreement.
            let why = |reason: &str| match set {
                LabelSet::Rubric => String::new(),
                LabelSet::Independent => format!(" (label: {reason})"),
            };
            match (l.verdict(set, &d.id), fired) {
                (Some((Verdict::Present, _)), true) => d.true_positives += 1,
                (Some((Verdict::Present, reason)), false) => {
                    d.false_negatives += 1;
                    d.wrong
                        .push(format!("missed on {}{}", r.trace, why(reason)));
                }
                (Some((Verdict::Absent, reason)), true) => {
                    d.false_positives += 1;
                    d.wrong.push(format!("fired on {}{}", r.trace, why(reason)));
                }
                (Some((Verdict::Absent, _)), false) => d.true_negatives += 1,
                (None, true) => d.unjudged_fired += 1,
                (None, false) => {}
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

/// One table's rows: per detector, its confusion counts, precision and recall.
fn detector_rows(o: &mut String, s: &Scores) {
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
}

/// A table's missed targets and its disagreements with the labels.
fn missed_and_wrong(o: &mut String, missed: Vec<String>, s: &Scores) {
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
}

/// The committed tables, in Markdown; `command` is what regenerates them.
pub fn markdown(e: &Evaluation, command: &str) -> String {
    let s = &e.rubric;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# The rule detectors on labelled real traces\n\n\
         Generated by `{command}`; do not edit by hand (a test regenerates it and fails when it \
         is out of date, or when a figure of the first table misses its target). Data: \
         **real** traces of `../shared/traces`, labelled in `models/real-labels.json` two ways, \
         as `docs/LABELS.md` explains; neither was derived from this tool's output. A detector \
         counts on a trace only where the labels judge it (present or absent); unjudged ids are \
         left out of precision and recall.\n\n\
         ## Figures-rubric labels\n\n\
         Labels measured from the raw JSON by `scripts/label_figures.py` with the quantities \
         the detectors' gates measure, then gated by `scripts/apply_rubric.py` (method \
         \"figures-rubric\"). Real traces, made by `{command}`.\n\n\
         {} labelled traces, {} healthy controls.\n\n\
         Targets: precision ≥ {TARGET_PRECISION} for every detector that fires, recall ≥ \
         {TARGET_RECALL} overall, no finding on a healthy control, findings never past the step.\n",
        s.traces, s.healthy_controls
    );
    detector_rows(&mut o, s);
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
    missed_and_wrong(&mut o, s.missed_targets(), s);
    let s = &e.independent;
    let _ = writeln!(
        o,
        "\n## Independent labels\n\n\
         Labels from `scripts/label_independent.py` (method \"independent-script\": other \
         statistics, its own thresholds, a gray zone left unjudged; no code or threshold shared \
         with the detectors or the first labeller) and from the traces' source code (method \
         \"source\"). Real traces, made by `{command}`.\n\n\
         {} labelled traces; {} present and {} absent labels.\n\n\
         Targets (reported here, not yet asserted): precision ≥ {TARGET_PRECISION} and recall ≥ \
         {TARGET_DETECTOR_RECALL} for every detector. Overall recall: **{}**.\n",
        s.traces,
        s.detectors
            .iter()
            .map(|d| d.true_positives + d.false_negatives)
            .sum::<usize>(),
        s.detectors
            .iter()
            .map(|d| d.false_positives + d.true_negatives)
            .sum::<usize>(),
        ratio(s.overall_recall()),
    );
    detector_rows(&mut o, s);
    let _ = writeln!(o);
    missed_and_wrong(&mut o, s.missed_detector_targets(), s);
    o
}
