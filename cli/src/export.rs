//! `ttap export --perfetto TRACE -o OUT.json [--steps A..B]`

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use torchtraceap::detect::{self, Analysis};
use torchtraceap::perfetto;
use torchtraceap::report::Report;

use crate::inspect::read_or_exit;

#[derive(clap::Args)]
pub struct Args {
    /// The trace: Kineto JSON, plain or gzip-compressed.
    file: PathBuf,
    /// Write a Chrome-trace JSON for Perfetto UI and chrome://tracing: the trace's events, a
    /// track per finding over its evidence windows, the window model's flagged windows and the
    /// steps' time split (the only format, required).
    #[arg(long, required = true)]
    perfetto: bool,
    /// Where to write it.
    #[arg(short, long)]
    output: PathBuf,
    /// Only the steps numbered A to B (inclusive), for a trace too big to export whole: the
    /// events overlapping them, and the findings' and model's windows in them.
    #[arg(long, value_name = "A..B", value_parser = parse_steps)]
    steps: Option<(i64, i64)>,
}

/// `A..B` or `A` (one step).
fn parse_steps(text: &str) -> Result<(i64, i64), String> {
    let number = |s: &str| {
        s.trim()
            .parse::<i64>()
            .map_err(|_| format!("`{text}` is not a range of step numbers like 3..5"))
    };
    match text.split_once("..") {
        Some((a, b)) => Ok((number(a)?, number(b.trim_start_matches('='))?)),
        None => number(text).map(|n| (n, n)),
    }
}

pub fn run(args: &Args) -> ExitCode {
    let ingested = match read_or_exit(&args.file) {
        Ok(i) => i,
        Err(code) => return code,
    };
    let analysis = Analysis::new(&ingested.trace);
    let report = Report::new(&analysis, &detect::run(&analysis));
    let written = std::fs::File::create(&args.output)
        .map_err(|e| format!("cannot create {}: {e}", args.output.display()))
        .and_then(|file| {
            let mut out = BufWriter::new(file);
            let done = perfetto::write(&mut out, &analysis, &report, args.steps)
                .map_err(|e| e.to_string())?;
            out.flush()
                .map_err(|e| format!("writing {}: {e}", args.output.display()))?;
            Ok(done)
        });
    match written {
        Ok(done) => {
            eprintln!(
                "{}: {} events, {} analysis slices ({} findings), {} flow points; open it in \
                 https://ui.perfetto.dev or chrome://tracing",
                args.output.display(),
                done.events,
                done.annotations / 2,
                report.findings.len(),
                done.flows
            );
            if let Some(cut) = done.cut {
                eprintln!("cut: {cut}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}: {e}", args.file.display());
            let _ = std::fs::remove_file(&args.output);
            ExitCode::from(2)
        }
    }
}
