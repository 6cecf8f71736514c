//! `ttap-dev eval-rules`: the rule detectors against the labelled real traces, one table per label
//! set (figures-rubric, independent); the exit status follows the first table's targets.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use torchtraceap::internals::detect::scoring::{evaluate, markdown, RealLabels};

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
pub const COMMAND: &str = "ttap-dev eval-rules";

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.labels)
        .with_context(|| format!("cannot read {}", args.labels.display()))?;
    let labels = RealLabels::from_json(&text).with_context(|| args.labels.display().to_string())?;
    let evaluation = evaluate(&labels, &args.traces).with_context(|| {
        format!(
            "scoring the rules on {}'s traces under {}",
            args.labels.display(),
            args.traces.display()
        )
    })?;
    let text = markdown(&evaluation, COMMAND);
    std::fs::write(&args.out, &text)
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    crate::out(&text);
    Ok(if evaluation.rubric.missed_targets().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
