//! `ttap compare BEFORE AFTER`: two traces, or two folders of traces (each folder compared as
//! its mean trace, `Profile::pooled`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use torchtraceap::compare::{render, Comparison};
use torchtraceap::profile::{Batch, Profile};
use torchtraceap::share::DEFAULT_MAX_BYTES;
use torchtraceap::view_link;

use crate::analyze::{analyze_all, expand};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Md,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// The trace before the change (Kineto JSON, plain or gzip), or a folder of traces (several
    /// runs, or the ranks of one job) compared as their mean trace.
    before: PathBuf,
    /// The trace after the change, or a folder of traces.
    after: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// The batch size of both runs, when the traces' input shapes do not tell it (samples/s).
    #[arg(long)]
    batch_size: Option<u64>,
    /// The batch size before, when it differs from after's.
    #[arg(long, conflicts_with = "batch_size")]
    batch_size_before: Option<u64>,
    /// The batch size after.
    #[arg(long, conflicts_with = "batch_size")]
    batch_size_after: Option<u64>,
    /// Names listed per table (changed, added, removed).
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Exit with code 1 when throughput (samples/s where batch sizes are known, else steps/s)
    /// drops by more than PCT percent beyond the spread of the steps (a gate for CI).
    #[arg(long, value_name = "PCT")]
    fail_on_regression: Option<f64>,
    /// Print a link to the comparison in the web app instead (the two traces' figures, never
    /// the traces).
    #[arg(long, conflicts_with_all = ["format", "fail_on_regression"])]
    share: bool,
    #[command(flatten)]
    link: crate::share::LinkArgs,
}

/// The profile of a trace file, or of a folder's mean trace, with a batch size given on the
/// command line. A folder is compared only when every trace in it reads.
fn profile_of(path: &Path, batch: Option<u64>) -> Result<Profile, String> {
    let mut profile = if path.is_dir() {
        let (files, _) = expand(&[path.to_path_buf()])?;
        let mut profiles = Vec::new();
        for (file, outcome) in files.iter().zip(analyze_all(&files)) {
            let kept = outcome.map_err(|e| {
                format!(
                    "{}: {e}; a folder is compared only when every trace in it reads: move this one out",
                    file.display()
                )
            })?;
            profiles.push(kept.profile);
        }
        let label = format!("{} ({} traces)", path.display(), profiles.len());
        Profile::pooled(&label, &profiles).ok_or_else(|| format!("{}: no trace", path.display()))?
    } else {
        crate::analyze::analyze_one(path, 1)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .profile
    };
    if let Some(size) = batch {
        profile.batch = Some(Batch {
            size,
            source: "given".into(),
        });
    }
    Ok(profile)
}

pub fn run(args: &Args) -> ExitCode {
    let before = profile_of(&args.before, args.batch_size.or(args.batch_size_before));
    let after = profile_of(&args.after, args.batch_size.or(args.batch_size_after));
    let (before, after) = match (before, after) {
        (Ok(b), Ok(a)) => (b, a),
        (b, a) => {
            for e in [b.err(), a.err()].into_iter().flatten() {
                eprintln!("error: {e}");
            }
            return ExitCode::from(2);
        }
    };
    if args.share {
        let options = args.link.options(DEFAULT_MAX_BYTES);
        return crate::share::print_view_link(
            "the comparison",
            &args.link,
            view_link::encode_comparison(&before, &after, &options),
        );
    }
    let c = Comparison::new(&before, &after);
    match args.format {
        Format::Text => crate::out(&render::text(&c, args.top)),
        Format::Md => crate::out(&render::markdown(&c, args.top)),
        Format::Json => crate::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&c).expect("comparisons serialize")
        )),
    }
    match (args.fail_on_regression, c.regression_pct()) {
        (Some(limit), Some(drop)) if drop > limit => {
            eprintln!(
                "regression: {} dropped {drop:.1} % (more than {limit} %)",
                c.throughput().1
            );
            ExitCode::from(1)
        }
        _ => ExitCode::SUCCESS,
    }
}
