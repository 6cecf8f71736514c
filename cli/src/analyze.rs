//! `ttap analyze FILE...`

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use torchtraceap::files::Analyzed;
use torchtraceap::run::is_run;
use torchtraceap::view_link;
use torchtraceap::{AnalyzedTrace, Severity, DETECTORS, OBSERVERS};

use torchtraceap_cli::read::{CaptureArg, WithProgress};

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
    /// Trace files: Kineto JSON (`*.pt.trace.json`), plain or gzip-compressed; or folders, whose
    /// `.json` and `.gz` files are read. Several ranks of one job (or a folder) also get the run
    /// view: per-rank step time, busy share, communication, the critical rank per step,
    /// stragglers.
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
    /// Several ranks of one run: print a link to the run view in the web app instead (the
    /// ranks' figures, never the traces).
    #[arg(long, conflicts_with_all = ["format", "fail_on"])]
    share: bool,
    #[command(flatten)]
    link: crate::share::LinkArgs,
    #[command(flatten)]
    capture: CaptureArg,
    /// An early look at one large plain trace (64 MiB or more): read only the byte ranges that
    /// hold its first steps (at most an eighth of the file, 128 MiB) and report what those
    /// steps say. The whole file's report can differ.
    #[arg(long, conflicts_with_all = ["share", "list", "fail_on"])]
    early: bool,
}

/// The reports; a file that does not read is said (`error: `) and the others still reported,
/// with exit code 2.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    if args.list {
        for d in DETECTORS {
            crate::out(&format!(
                "{:<28} {}\n{:<28} gate: {}{}\n",
                d.id(),
                d.title(),
                "",
                d.threshold(),
                if d.training_only() {
                    "; training traces only"
                } else if d.assumes_training() {
                    "; off for serving captures"
                } else if d.reads_decode() {
                    "; on serving captures, their decode iterations"
                } else {
                    ""
                }
            ));
        }
        crate::out("Notes (observations without a time estimate; never ranked with findings):\n");
        for o in OBSERVERS.iter().map(|o| o.about()) {
            crate::out(&format!(
                "{:<28} {}\n{:<28} when: {}\n",
                o.id,
                o.title,
                "",
                o.threshold()
            ));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let gate = args.fail_on.map(|f| match f {
        FailOn::Low => Severity::Low,
        FailOn::Medium => Severity::Medium,
        FailOn::High => Severity::High,
    });
    if args.early {
        return early(args);
    }
    let analyzed = match args.capture.read()? {
        Some(beside) => {
            if args.files.len() != 1 || args.files[0].is_dir() {
                anyhow::bail!(
                    "--capture ties one trace of graph replays to its capture: give one trace file, not {}",
                    if args.files.len() == 1 { "a folder".to_string() } else { format!("{} files", args.files.len()) }
                );
            }
            Analyzed::new(&args.files, &beside)?
        }
        None => Analyzed::new(&args.files, &WithProgress)?,
    };
    let errors = analyzed.errors();
    for e in &errors {
        eprintln!("error: {e}");
    }
    if args.share {
        let profiles = analyzed.profiles();
        if !errors.is_empty() || !is_run(&profiles) {
            anyhow::bail!(
                "--share needs the traces of two or more ranks of one run, each read (for one trace: `ttap share FILE`)"
            );
        }
        let options = args.link.options(view_link::RUN_MAX_BYTES);
        return crate::share::print_view_link(
            "the run view",
            &args.link,
            view_link::encode_run(&profiles, &options),
        );
    }
    match args.format {
        Format::Md => crate::out(&analyzed.markdown()),
        Format::Json => crate::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&analyzed.json()).expect("reports serialize")
        )),
    }
    Ok(if !errors.is_empty() {
        ExitCode::from(2)
    } else if gate.is_some_and(|g| analyzed.reaches(g)) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--early`: the early look at one trace, or why there is none.
fn early(args: &Args) -> anyhow::Result<ExitCode> {
    let [path] = args.files.as_slice() else {
        anyhow::bail!("--early reads one trace file; {} given", args.files.len());
    };
    let Some(e) = torchtraceap::ingest::early::read_early(path)
        .with_context(|| format!("reading {}", path.display()))?
    else {
        anyhow::bail!(
            "{}: no early look: it needs a plain (not gzip) trace of {} MiB or more whose first steps fit in an eighth of the file; run `ttap analyze {}` for the whole file",
            path.display(),
            torchtraceap::ingest::early::MIN_FILE_BYTES >> 20,
            path.display()
        );
    };
    let analyzed = AnalyzedTrace::new(&e.ingested);
    let (first, last) = e.step_range();
    eprintln!(
        "Early look at {}: {} whole steps ({first}–{last}), {:.1} of {:.1} MiB read ({:.1}%); the whole file's report can differ.",
        path.display(),
        e.ingested.trace.steps.len(),
        e.read as f64 / 1048576.0,
        e.len as f64 / 1048576.0,
        100.0 * e.read as f64 / e.len as f64
    );
    let name = path.display().to_string();
    match args.format {
        Format::Md => crate::out(&analyzed.report().to_markdown(&name)),
        Format::Json => crate::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(analyzed.report()).expect("reports serialize")
        )),
    }
    Ok(ExitCode::SUCCESS)
}
