//! The door into the library: a trace read and analyzed once, with every view the front ends
//! show of it. `ttap`, the Python package (both through `files`), the web app's worker and the
//! development tools make an [`AnalyzedTrace`] and ask it; none of them runs the stages
//! (`Analysis::new`, `detect::run`, `Report::new`) itself (`tests/layers.rs` checks).
//!
//! It holds what analyzing yields: the [`Analysis`] (steps, windows, metrics, splits), the
//! ranked findings and notes, the versioned [`Report`] (with the window model's scores) and the
//! trace's fingerprint, made once, on first use. It borrows the trace it was read into
//! (`Ingested`), because the analysis reads the trace in place instead of copying it: the
//! caller keeps the trace at least as long (the worker keeps both for its life).

use std::cell::OnceCell;
use std::io::Write;

use crate::analysis::Analysis;
use crate::detect::{self, Detected, Finding};
use crate::features::{of_trace, WindowFeatures};
use crate::ingest::Ingested;
use crate::llm::summary::{self, Prompt, SummaryOptions, WindowSummary};
use crate::ml::Model;
use crate::model::fingerprint::fingerprint;
use crate::model::Trace;
use crate::modules::ModuleTree;
use crate::perfetto::{self, ExportError, Exported};
use crate::profile::Profile;
use crate::report::Report;
use crate::share::SharedReport;
use crate::summary::Summary;
use crate::timeline::bands::{self, Band, Score};
use crate::timeline::steps::StepStrip;

/// A trace analyzed: its analysis, findings, notes and report, and the views made of them.
pub struct AnalyzedTrace<'t> {
    ingested: &'t Ingested,
    analysis: Analysis<'t>,
    detected: Detected,
    report: Report,
    /// `model::fingerprint` of the trace, made when first asked.
    fingerprint: OnceCell<String>,
}

impl<'t> AnalyzedTrace<'t> {
    /// Analyzes a trace read: its steps and metrics, the rules (ranked findings, notes), and
    /// the report with the window model's scores.
    pub fn new(ingested: &'t Ingested) -> AnalyzedTrace<'t> {
        let analysis = Analysis::new(&ingested.trace);
        let detected = detect::run(&analysis);
        let report = Report::new(&analysis, &detected);
        AnalyzedTrace {
            ingested,
            analysis,
            detected,
            report,
            fingerprint: OnceCell::new(),
        }
    }

    /// The trace as read, with what reading it met.
    pub fn ingested(&self) -> &'t Ingested {
        self.ingested
    }

    /// The normalized trace.
    pub fn trace(&self) -> &'t Trace {
        &self.ingested.trace
    }

    /// The steps, windows, metrics and splits the rules and views read.
    pub fn analysis(&self) -> &Analysis<'t> {
        &self.analysis
    }

    /// The findings, ranked by time recoverable per step.
    pub fn findings(&self) -> &[Finding] {
        &self.detected.findings
    }

    /// The findings and the notes, as the rules left them.
    pub fn detected(&self) -> &Detected {
        &self.detected
    }

    /// The versioned report.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// The report, kept when nothing else is.
    pub fn into_report(self) -> Report {
        self.report
    }

    /// The trace's fingerprint (`fp1-…`): how a link, a saved report or a kept label finds it
    /// again. Made once.
    pub fn fingerprint(&self) -> &str {
        self.fingerprint.get_or_init(|| fingerprint(self.trace()))
    }

    /// What the trace holds (devices, steps, events per kind), with `top` kernels listed.
    pub fn summary(&self, top: usize) -> Summary {
        Summary::of(self.ingested, top)
    }

    /// The trace reduced to kilobytes for comparisons and run views, named `label`.
    pub fn profile(&self, label: &str) -> Profile {
        Profile::new(label, &self.analysis, self.findings())
    }

    /// GPU and CPU time per model module, when the trace has module frames.
    pub fn modules(&self) -> Option<ModuleTree> {
        ModuleTree::of(self.trace())
    }

    /// The report with the fingerprint, as a link carries it.
    pub fn shared(&self) -> SharedReport {
        SharedReport::new(self.report.clone(), self.fingerprint().to_string())
    }

    /// The flagged windows summarised for an LLM: findings in rank order, then the report's
    /// unexplained regions.
    pub fn window_summaries(&self, options: &SummaryOptions) -> Vec<WindowSummary> {
        summary::summarize(&self.analysis, self.findings(), &self.report, options)
    }

    /// The LLM requests about the flagged windows, one per window, within `options`' budget.
    pub fn prompts(&self, options: &SummaryOptions) -> Vec<Prompt> {
        summary::prompts(&self.window_summaries(options), options)
    }

    /// Writes the Perfetto export (the trace's events and the analysis as tracks): the whole
    /// trace, or the steps numbered `steps.0..=steps.1`.
    pub fn perfetto(
        &self,
        out: &mut impl Write,
        steps: Option<(i64, i64)>,
    ) -> Result<Exported, ExportError> {
        perfetto::write(out, &self.analysis, &self.report, steps)
    }

    /// The feature vector of every window, in order.
    pub fn features(&self) -> Vec<WindowFeatures> {
        of_trace(self.trace(), &self.analysis.steps)
    }

    /// Scores the report's windows with `model` from their `features` (the report's flagged
    /// regions follow).
    pub fn rescore(&mut self, model: &Model, features: &[WindowFeatures]) {
        self.report
            .score_windows(&self.analysis, &self.detected.findings, model, features);
    }

    /// The timeline's finding bands: each finding over the windows holding its evidence.
    pub fn bands(&self) -> Vec<Band> {
        bands::bands(&self.analysis, self.findings(), &self.report)
    }

    /// The timeline's step strip: each step labelled (a serving capture's iterations by kind).
    pub fn step_strip(&self) -> StepStrip {
        StepStrip::of(&self.analysis)
    }

    /// The timeline's heat strip: the window model's score of each window.
    pub fn window_scores(&self) -> Vec<Score> {
        bands::scores(&self.analysis, &self.report)
    }
}
