//! `ttap analyze FILE...`

use std::path::PathBuf;
use std::process::ExitCode;

use torchtraceap::detect::{self, Analysis, Severity};
use torchtraceap::ingest::IngestOptions;
use torchtraceap::report::Report;
use torchtraceap::share::fingerprint;

use crate::inspect::read_file;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Md,
    Json,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Low,
    Medium,
    High,
}

#[derive(clap::Args)]
pub struct Args {
    /// Trace files: Kineto JSON (`*.pt.trace.json`), plain or gzip-compressed.
    #[arg(required_unless_present = "list")]
    files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Md)]
    format: Format,
    /// Exit with code 1 when a finding has this severity or higher (a gate for CI).
    #[arg(long, value_enum)]
    fail_on: Option<FailOn>,
    /// List the detectors and their thresholds, then exit.
    #[arg(long)]
    list: bool,
}

pub fn run(args: &Args) -> ExitCode {
    if args.list {
        for d in detect::DETECTORS {
            crate::out(&format!(
                "{:<28} {}\n{:<28} gate: {}{}\n",
                d.id(),
                d.title(),
                "",
                d.threshold(),
                if d.training_only() {
                    "; training traces only"
                } else {
                    ""
                }
            ));
        }
        crate::out("Notes (observations without a time estimate; never ranked with findings):\n");
        for o in detect::OBSERVERS {
            crate::out(&format!(
                "{:<28} {}\n{:<28} when: {}\n",
                o.id(),
                o.title(),
                "",
                o.threshold()
            ));
        }
        return ExitCode::SUCCESS;
    }
    let gate = args.fail_on.map(|f| match f {
        FailOn::Low => Severity::Low,
        FailOn::Medium => Severity::Medium,
        FailOn::High => Severity::High,
    });
    let mut unusable = false;
    let mut gated = false;
    let mut json = Vec::new();
    for path in &args.files {
        let ingested = match read_file(path, IngestOptions::default()) {
            Ok(i) => i,
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                unusable = true;
                continue;
            }
        };
        let analysis = Analysis::new(&ingested.trace);
        let findings = detect::run(&analysis);
        gated |= gate.is_some_and(|g| findings.findings.iter().any(|f| f.severity >= g));
        let report = Report::new(&analysis, &findings);
        match args.format {
            Format::Md => crate::out(&format!(
                "{}\n",
                report.to_markdown(&path.display().to_string())
            )),
            Format::Json => json.push(serde_json::json!({
                "file": path,
                "fingerprint": fingerprint(&ingested.trace),
                "report": report,
            })),
        }
    }
    if args.format == Format::Json {
        crate::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&json).expect("reports serialize")
        ));
    }
    if unusable {
        ExitCode::from(2)
    } else if gated {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
