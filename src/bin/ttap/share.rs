//! `ttap share FILE` and `ttap share --decode LINK`

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use torchtraceap::detect::{self, Analysis};
use torchtraceap::ingest::IngestOptions;
use torchtraceap::report::Report;
use torchtraceap::share::{self, ShareOptions, SharedReport, DEFAULT_MAX_BYTES};

use crate::inspect::read_file;

#[derive(clap::Args)]
pub struct Args {
    /// The trace to share the analysis of: Kineto JSON, plain or gzip-compressed.
    #[arg(required_unless_present = "decode", conflicts_with = "decode")]
    file: Option<PathBuf>,
    /// The longest fragment (the part after '#') to write, in bytes; the least important parts
    /// of the report are left out until it fits.
    #[arg(long, default_value_t = DEFAULT_MAX_BYTES)]
    max_bytes: usize,
    /// Where the TorchTraceAP web app is served; the link is this, '#' and the fragment.
    #[arg(long, default_value = "http://127.0.0.1:8080/")]
    base_url: String,
    /// Print the report a link (or its fragment) carries, as JSON, instead of making one.
    #[arg(long, value_name = "LINK_OR_FRAGMENT")]
    decode: Option<String>,
}

pub fn run(args: &Args) -> ExitCode {
    match (&args.decode, &args.file) {
        (Some(link), _) => decode(link),
        (None, Some(path)) => encode(args, path),
        (None, None) => unreachable!("clap requires a file or --decode"),
    }
}

fn decode(link: &str) -> ExitCode {
    match share::decode(link) {
        Ok(shared) => {
            crate::out(&format!(
                "{}\n",
                serde_json::to_string_pretty(&shared).expect("a shared report serializes")
            ));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn encode(args: &Args, path: &Path) -> ExitCode {
    let ingested = match read_file(path, IngestOptions::default()) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let analysis = Analysis::new(&ingested.trace);
    let report = Report::new(&analysis, &detect::run(&analysis));
    let shared = SharedReport::new(report, share::fingerprint(&ingested.trace));
    let options = ShareOptions {
        max_bytes: args.max_bytes,
    };
    match share::encode(&shared, &options) {
        Ok(encoded) => {
            crate::out(&format!("{}#{}\n", args.base_url, encoded.fragment));
            eprintln!(
                "{}: a link fragment of {} bytes (limit {}), {} findings, trace fingerprint {}",
                path.display(),
                encoded.bytes,
                args.max_bytes,
                encoded.kept.report.findings.len(),
                encoded.kept.fingerprint
            );
            for o in encoded.dropped() {
                eprintln!("left out to fit: {o}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            ExitCode::from(2)
        }
    }
}
