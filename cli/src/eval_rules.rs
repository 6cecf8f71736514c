//! `ttap eval-rules`: the rule detectors against the labelled real traces, one table per label
//! set (figures-rubric, independent); the exit status follows the first table's targets.

use std::path::PathBuf;
use std::process::ExitCode;

use torchtraceap::detect::scoring::{evaluate, markdown, RealLabels};

#[derive(clap::Args)]
pub struct Args {
    /// The label file.
    #[arg(long, default_value = "models/real-labels.json")]
    labels: PathBuf,
    /// The folder the labels' trace paths are relative to.
    #[arg(long, env = "TTAP_SHARED_TRACES", default_value = "../shared/traces")]
    traces: PathBuf,
    /// Where to write the Markdown table.
    #[arg(long, default_value = "models/RULES.md")]
    out: PathBuf,
}

/// The command line the committed table names as its source.
pub const COMMAND: &str = "ttap eval-rules";

pub fn run(args: &Args) -> ExitCode {
    let labels = match std::fs::read_to_string(&args.labels)
        .map_err(|e| format!("cannot read {}: {e}", args.labels.display()))
        .and_then(|text| RealLabels::from_json(&text).map_err(|e| e.to_string()))
    {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let evaluation = match evaluate(&labels, &args.traces) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let text = markdown(&evaluation, COMMAND);
    if let Err(e) = std::fs::write(&args.out, &text) {
        eprintln!("error: cannot write {}: {e}", args.out.display());
        return ExitCode::from(2);
    }
    crate::out(&text);
    if evaluation.rubric.missed_targets().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
