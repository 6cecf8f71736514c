//! `ttap export --perfetto TRACE -o OUT.json [--steps A..B]`

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use torchtraceap::AnalyzedTrace;

use torchtraceap_cli::read::read_trace;

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
fn parse_steps(text: &str) -> anyhow::Result<(i64, i64)> {
    let number = |s: &str| {
        s.trim()
            .parse::<i64>()
            .with_context(|| format!("`{text}` is not a range of step numbers like 3..5"))
    };
    match text.split_once("..") {
        Some((a, b)) => Ok((number(a)?, number(b.trim_start_matches('='))?)),
        None => number(text).map(|n| (n, n)),
    }
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let ingested = read_trace(&args.file)?;
    let analyzed = AnalyzedTrace::new(&ingested);
    let written = std::fs::File::create(&args.output)
        .with_context(|| format!("cannot create {}", args.output.display()))
        .and_then(|file| {
            let mut out = BufWriter::new(file);
            let done = analyzed.perfetto(&mut out, args.steps)?;
            out.flush()
                .with_context(|| format!("writing {}", args.output.display()))?;
            Ok(done)
        });
    let done = written
        .inspect_err(|_| {
            // No half-written file is left.
            let _ = std::fs::remove_file(&args.output);
        })
        .with_context(|| args.file.display().to_string())?;
    eprintln!(
        "{}: {} events, {} analysis slices ({} findings), {} flow points; open it in \
         https://ui.perfetto.dev or chrome://tracing",
        args.output.display(),
        done.events,
        done.annotations / 2,
        analyzed.report().findings.len(),
        done.flows
    );
    if let Some(cut) = done.cut {
        eprintln!("cut: {cut}");
    }
    Ok(ExitCode::SUCCESS)
}
