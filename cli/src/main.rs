//! `ttap`: the command-line front end over the `torchtraceap` library.

mod analyze;
mod compare;
mod explain;
mod export;
mod inspect;
mod mcp;
mod modules;
mod share;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
// `crate::out` for the commands: stdout, quiet on a closed pipe.
use torchtraceap_cli::out;

#[derive(Parser)]
#[command(
    name = "ttap",
    version,
    about = "TorchTraceAP: find performance anti-patterns in PyTorch profiler traces"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print what a trace holds: format and era, devices, rank, steps, events per kind, GPU busy
    /// time per device, top kernels.
    Inspect(inspect::Args),
    /// Find performance anti-patterns: a report ranked by time recoverable per step, with
    /// evidence and fixes (Markdown or JSON). Exit code 1 with --fail-on when a finding is at
    /// least that severe.
    Analyze(analyze::Args),
    /// Compare two traces, before and after a change: throughput, step time with its spread,
    /// the step split, GPU busy share, the kernels and operators whose time changed most,
    /// findings fixed and new, and a verdict line. Exit code 1 with --fail-on-regression.
    Compare(compare::Args),
    /// GPU and CPU time by the model's modules (nn.Module frames, record_function labels), as a
    /// tree: kernels count for the module whose op launched them.
    Modules(modules::Args),
    /// Export a trace with its analysis for Perfetto UI and chrome://tracing (--perfetto): its
    /// events, a track per finding over its evidence windows, the window model's flagged
    /// windows with their scores, the steps' time split; --steps A..B for part of a big trace.
    Export(export::Args),
    /// Print a link that carries the analysis of a trace (never the trace itself) in its
    /// fragment, within a size budget; or, with --decode, the report a link carries.
    Share(share::Args),
    /// Send compact summaries of the flagged windows (never the trace) to an LLM endpoint
    /// (OpenAI-compatible or Ollama) and print its diagnoses; --dry-run prints the requests.
    Explain(explain::Args),
    /// Serve the analysis as tools for agents: a Model Context Protocol server on stdio that
    /// reads traces only under the --root directories.
    Mcp(mcp::Args),
}

/// Runs the command: its exit code (0, or 1 where a `--fail-on` gate is crossed; 2 where some
/// input did not read and the rest was still reported), or its error, printed after `error: `
/// with the context it gathered (what failed, where), and exit code 2.
fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Inspect(args) => inspect::run(&args),
        Command::Analyze(args) => analyze::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Modules(args) => modules::run(&args),
        Command::Share(args) => share::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Mcp(args) => mcp::run(&args),
    };
    outcome.unwrap_or_else(|e| {
        eprintln!("error: {e:#}");
        ExitCode::from(2)
    })
}
