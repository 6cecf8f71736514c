//! `ttap compare BEFORE AFTER`: two traces, or two folders of traces (each folder compared as
//! its mean trace, `Profile::pooled`).

use std::path::PathBuf;
use std::process::ExitCode;

use torchtraceap::compare::{render, Comparison};
use torchtraceap::files;
use torchtraceap::share::DEFAULT_MAX_BYTES;
use torchtraceap::view_link;

use torchtraceap_cli::read::WithProgress;

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

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let before = files::profile_of(
        &args.before,
        args.batch_size.or(args.batch_size_before),
        &WithProgress,
    );
    let after = files::profile_of(
        &args.after,
        args.batch_size.or(args.batch_size_after),
        &WithProgress,
    );
    let (before, after) = match (before, after) {
        (Ok(b), Ok(a)) => (b, a),
        // Both sides' errors are said, the first here.
        (Err(b), Err(a)) => {
            eprintln!("error: {b}");
            return Err(a.into());
        }
        (Err(e), _) | (_, Err(e)) => return Err(e.into()),
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
    Ok(match (args.fail_on_regression, c.regression_pct()) {
        (Some(limit), Some(drop)) if drop > limit => {
            eprintln!(
                "regression: {} dropped {drop:.1} % (more than {limit} %)",
                c.throughput().1
            );
            ExitCode::from(1)
        }
        _ => ExitCode::SUCCESS,
    })
}
