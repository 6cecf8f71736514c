//! `ttap analyze FILE...`

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use torchtraceap::detect::{self, Analysis, Severity};
use torchtraceap::ingest::IngestOptions;
use torchtraceap::profile::Profile;
use torchtraceap::report::Report;
use torchtraceap::run::{is_run, render, RunView};
use torchtraceap::share::fingerprint;
use torchtraceap::view_link;

use crate::inspect::read_file_among;

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
        for o in detect::OBSERVERS.iter().map(|o| o.about()) {
            crate::out(&format!(
                "{:<28} {}\n{:<28} when: {}\n",
                o.id, o.title, "", o.threshold
            ));
        }
        return ExitCode::SUCCESS;
    }
    let gate = args.fail_on.map(|f| match f {
        FailOn::Low => Severity::Low,
        FailOn::Medium => Severity::Medium,
        FailOn::High => Severity::High,
    });
    let (files, folder) = match expand(&args.files) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut unusable = false;
    let mut gated = false;
    let mut json = Vec::new();
    let mut text = String::new();
    let mut profiles = Vec::new();
    for (path, outcome) in files.iter().zip(analyze_all(&files)) {
        let Kept {
            report,
            profile,
            fingerprint,
        } = match outcome {
            Ok(done) => done,
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                unusable = true;
                continue;
            }
        };
        gated |= gate.is_some_and(|g| {
            report
                .findings
                .iter()
                .any(|f| severity(&f.severity).is_some_and(|s| s >= g))
        });
        match args.format {
            Format::Md => {
                text.push_str(&report.to_markdown(&path.display().to_string()));
                text.push('\n');
            }
            Format::Json => json.push(serde_json::json!({
                "file": path,
                "fingerprint": fingerprint,
                "report": report,
            })),
        }
        profiles.push(profile);
    }
    if args.share {
        if unusable || !is_run(&profiles) {
            eprintln!(
                "error: --share needs the traces of two or more ranks of one run, each read (for one trace: `ttap share FILE`)"
            );
            return ExitCode::from(2);
        }
        let options = args.link.options(view_link::RUN_MAX_BYTES);
        return crate::share::print_view_link(
            "the run view",
            &args.link,
            view_link::encode_run(&profiles, &options),
        );
    }
    let run =
        (profiles.len() >= 2 && (folder || is_run(&profiles))).then(|| RunView::new(&profiles));
    if let Some(run) = &run {
        gated |= gate.is_some_and(|g| {
            run.findings
                .iter()
                .any(|f| severity(&f.severity).is_some_and(|s| s >= g))
        });
    }
    match (args.format, &run) {
        (Format::Md, Some(run)) => crate::out(&format!("{}\n{text}", render::markdown(run))),
        (Format::Md, None) => crate::out(&text),
        (Format::Json, Some(run)) => crate::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::json!({ "run": run, "reports": json }))
                .expect("run views serialize")
        )),
        (Format::Json, None) => crate::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&json).expect("reports serialize")
        )),
    }
    if unusable {
        ExitCode::from(2)
    } else if gated {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn severity(label: &str) -> Option<Severity> {
    [Severity::Low, Severity::Medium, Severity::High]
        .into_iter()
        .find(|s| s.label() == label)
}

/// The files to read (a folder's `.json` and `.gz` files, sorted) and whether a folder was
/// given.
pub fn expand(inputs: &[PathBuf]) -> Result<(Vec<PathBuf>, bool), String> {
    let mut files = Vec::new();
    let mut folder = false;
    for input in inputs {
        if input.is_dir() {
            folder = true;
            let mut inside: Vec<PathBuf> = std::fs::read_dir(input)
                .map_err(|e| format!("{}: {e}", input.display()))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json" || x == "gz"))
                .collect();
            if inside.is_empty() {
                return Err(format!(
                    "{}: no .json or .gz trace in this folder",
                    input.display()
                ));
            }
            inside.sort();
            files.extend(inside);
        } else {
            files.push(input.clone());
        }
    }
    Ok((files, folder))
}

/// What is kept of one analyzed file: its report, compact profile and fingerprint.
pub struct Kept {
    pub report: Report,
    pub profile: Profile,
    pub fingerprint: String,
}

/// One file's `Kept`, or why it could not be read.
type Analyzed = Result<Kept, String>;

/// Each file's report and profile, analyzed on up to as many threads as there are cores; only
/// the report and the compact profile outlive a file's analysis.
pub fn analyze_all(files: &[PathBuf]) -> Vec<Analyzed> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<Analyzed>>> = Mutex::new(files.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = files.get(k) else { break };
                let outcome = analyze_one(path, workers);
                done.lock().expect("no worker panics")[k] = Some(outcome);
            });
        }
    });
    done.into_inner()
        .expect("no worker panics")
        .into_iter()
        .map(|o| o.expect("every file analyzed"))
        .collect()
}

/// One file's report, compact profile and fingerprint, while `concurrent` files are analyzed
/// at once (the cores are shared out among them).
pub fn analyze_one(path: &Path, concurrent: usize) -> Analyzed {
    let ingested =
        read_file_among(path, IngestOptions::default(), concurrent).map_err(|e| e.to_string())?;
    let analysis = Analysis::new(&ingested.trace);
    let findings = detect::run(&analysis);
    let report = Report::new(&analysis, &findings);
    let label = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    Ok(Kept {
        profile: Profile::new(&label, &analysis, &findings.findings),
        fingerprint: fingerprint(&ingested.trace),
        report,
    })
}
