//! `ttap features FILE`: the feature vector of every window, as JSON lines (with labels from
//! `ttap synth --labels` when given), for training and inspecting the window detector.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{json, Value};
use torchtraceap::features::{of_trace, NAMES};
use torchtraceap::ingest::IngestOptions;
use torchtraceap::window::split;

use crate::inspect::read_file;

#[derive(clap::Args)]
pub struct Args {
    /// A trace file.
    file: PathBuf,
    /// Labels written by `ttap synth --labels`: each window gets the anti-pattern injected in its
    /// step and phase, or "none".
    #[arg(long)]
    labels: Option<PathBuf>,
}

/// `(step, phase, pattern)` of each label.
fn read_labels(path: &PathBuf) -> Result<Vec<(i64, String, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let list: Vec<Value> = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a labels file ({e})", path.display()))?;
    list.iter()
        .map(|l| {
            let field = |k: &str| l.get(k).and_then(Value::as_str).map(str::to_owned);
            match (
                l.get("step").and_then(Value::as_i64),
                field("phase"),
                field("pattern"),
            ) {
                (Some(s), Some(p), Some(a)) => Ok((s, p, a)),
                _ => Err(format!(
                    "{}: each label needs step, phase and pattern",
                    path.display()
                )),
            }
        })
        .collect()
}

pub fn run(args: &Args) -> ExitCode {
    let labels = match args.labels.as_ref().map(read_labels).transpose() {
        Ok(l) => l.unwrap_or_default(),
        Err(e) => {
            eprintln!("error: ttap features: {e}");
            return ExitCode::from(2);
        }
    };
    let ingested = match read_file(&args.file, IngestOptions::default()) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {}: {e}", args.file.display());
            return ExitCode::from(2);
        }
    };
    let steps = split(&ingested.trace);
    let mut out = String::new();
    for w in of_trace(&ingested.trace, &steps) {
        let label = labels
            .iter()
            .find(|(s, p, _)| *s == w.step && p == w.phase.label())
            .map_or("none", |(_, _, a)| a.as_str());
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
    ExitCode::SUCCESS
}
