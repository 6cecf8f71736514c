//! `ttap-dev features FILE`: the feature vector of every window, as JSON lines (with labels from
//! `ttap-dev synth --labels` or the web app's Export labels when given), for training and inspecting the window detector.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use serde_json::{json, Value};
use torchtraceap::internals::features::{of_trace, NAMES};
use torchtraceap::internals::window::split;
use torchtraceap::ml::labels::{self, WindowLabel, NOT_AN_ANTI_PATTERN};
use torchtraceap::share::fingerprint;

use torchtraceap_cli::read::read_trace;

#[derive(clap::Args)]
pub struct Args {
    /// A trace file.
    file: PathBuf,
    /// Labels written by `ttap-dev synth --labels` or the web app's Export labels: each window gets
    /// the anti-pattern of its step and phase (and index in the step, when the label has one),
    /// or "none".
    #[arg(long)]
    labels: Option<PathBuf>,
}

/// A labels file (`ttap-dev synth --labels`, the web app's Export labels), read and checked.
pub fn read_labels(path: &PathBuf) -> anyhow::Result<Vec<WindowLabel>> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    Ok(labels::parse(&text, &path.display().to_string())?)
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let labels = args
        .labels
        .as_ref()
        .map(read_labels)
        .transpose()
        .context("ttap-dev features")?
        .unwrap_or_default();
    let ingested = read_trace(&args.file)?;
    let labels = labels::for_trace(
        labels,
        &fingerprint(&ingested.trace),
        &args
            .labels
            .as_ref()
            .map_or(String::new(), |p| p.display().to_string()),
        &args.file.display().to_string(),
    )
    .context("ttap-dev features")?;
    let steps = split(&ingested.trace);
    let mut out = String::new();
    let (mut step, mut index) = (None, 0);
    for w in of_trace(&ingested.trace, &steps) {
        index = if step == Some(w.step) { index + 1 } else { 0 };
        step = Some(w.step);
        let label = labels
            .iter()
            .find(|l| l.names(w.step, w.phase.label(), index))
            .map_or(NOT_AN_ANTI_PATTERN, |l| l.pattern.as_str());
        let features: serde_json::Map<String, Value> = NAMES
            .iter()
            .zip(&w.values)
            .map(|(n, v)| (n.to_string(), json!(v)))
            .collect();
        let row = json!({"step": w.step, "phase": w.phase.label(), "start_ns": w.start, "end_ns": w.end, "label": label, "features": features});
        out.push_str(&row.to_string());
        out.push('\n');
    }
    crate::out(&out);
    Ok(ExitCode::SUCCESS)
}
