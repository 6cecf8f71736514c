//! `ttap share FILE` and `ttap share --decode LINK` (a report's, a comparison's or a run's);
//! the link options and output of `ttap compare --share` and `ttap analyze --share`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use torchtraceap::share::{self, ShareError, ShareOptions, DEFAULT_MAX_BYTES};
use torchtraceap::view_link;
use torchtraceap::AnalyzedTrace;

use torchtraceap_cli::read::read_trace;

#[derive(clap::Args)]
pub struct Args {
    /// The trace to share the analysis of: Kineto JSON, plain or gzip-compressed.
    #[arg(required_unless_present = "decode", conflicts_with = "decode")]
    file: Option<PathBuf>,
    #[command(flatten)]
    link: LinkArgs,
    /// Print what a link (or its fragment) carries, as JSON, instead of making one: a report, or
    /// the comparison or run view this version computes from a comparison's or run's link.
    #[arg(long, value_name = "LINK_OR_FRAGMENT")]
    decode: Option<String>,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    match (&args.decode, &args.file) {
        (Some(link), _) => decode(link),
        (None, Some(path)) => encode(args, path),
        (None, None) => unreachable!("clap requires a file or --decode"),
    }
}

/// Where a link points and how long it may be.
#[derive(clap::Args)]
pub struct LinkArgs {
    /// The longest fragment (the part after '#') to write, in bytes; the least important parts
    /// are left out until it fits [default: 8192; a run's link: 65536].
    #[arg(long)]
    max_bytes: Option<usize>,
    /// Where the TorchTraceAP web app is served; the link is this, '#' and the fragment.
    #[arg(long, default_value = share::DEFAULT_BASE_URL)]
    base_url: String,
}

impl LinkArgs {
    pub fn options(&self, default: usize) -> ShareOptions {
        ShareOptions {
            max_bytes: self.max_bytes.unwrap_or(default),
        }
    }
}

/// Prints a comparison's or run's link (stdout) and its size (stderr), or why it cannot be made.
pub fn print_view_link(
    what: &str,
    link: &LinkArgs,
    encoded: Result<view_link::Encoded, ShareError>,
) -> anyhow::Result<ExitCode> {
    let encoded = encoded.with_context(|| what.to_string())?;
    crate::out(&format!("{}#{}\n", link.base_url, encoded.fragment));
    eprintln!("{what}: a link fragment of {} bytes", encoded.bytes);
    if encoded.kept.rows_left_out > 0 {
        eprintln!(
            "left out to fit: {} table rows with the smallest changes",
            encoded.kept.rows_left_out
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn decode_view(link: &str) -> anyhow::Result<ExitCode> {
    let v = view_link::decode(link)?;
    let json = match (v.comparison(), v.run()) {
        (Some(c), _) => serde_json::to_string_pretty(&c),
        (None, Some(r)) => serde_json::to_string_pretty(&r),
        (None, None) => unreachable!("a link is a comparison or a run"),
    };
    crate::out(&format!("{}\n", json.expect("views serialize")));
    Ok(ExitCode::SUCCESS)
}

fn decode(link: &str) -> anyhow::Result<ExitCode> {
    if view_link::is_view_link(link) {
        return decode_view(link);
    }
    let shared = share::decode(link)?;
    crate::out(&format!(
        "{}\n",
        serde_json::to_string_pretty(&shared).expect("a shared report serializes")
    ));
    Ok(ExitCode::SUCCESS)
}

fn encode(args: &Args, path: &Path) -> anyhow::Result<ExitCode> {
    let ingested = read_trace(path)?;
    let shared = AnalyzedTrace::new(&ingested).shared();
    let options = args.link.options(DEFAULT_MAX_BYTES);
    let encoded = share::encode(&shared, &options).with_context(|| path.display().to_string())?;
    crate::out(&format!("{}#{}\n", args.link.base_url, encoded.fragment));
    eprintln!(
        "{}: a link fragment of {} bytes (limit {}), {} findings, trace fingerprint {}",
        path.display(),
        encoded.bytes,
        options.max_bytes,
        encoded.kept.report.findings.len(),
        encoded.kept.fingerprint
    );
    for o in encoded.dropped() {
        eprintln!("left out to fit: {o}");
    }
    Ok(ExitCode::SUCCESS)
}
