//! `ttap`: the command-line front end over the `torchtraceap` library.

mod analyze;
mod bench;
mod compare;
mod eval;
mod eval_rules;
mod explain;
mod export;
mod features;
mod inspect;
mod llm_eval;
mod mcp;
mod modules;
mod realism;
mod share;
mod synth;
mod train;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    /// Measure ingest throughput and peak memory on a large trace built from a real one, against
    /// serde_json skimming the same bytes.
    Bench(bench::Args),
    /// Write a synthetic Kineto trace of a vision model (ResNet-50, ViT-B/16, Swin-T, DETR, a
    /// video model) on a chosen GPU, with anti-patterns injected at chosen steps, and its labels;
    /// or, with --ranks, the rank traces of one data-parallel run.
    Synth(synth::Args),
    /// Print the feature vector of every window as JSON lines, labelled from `synth --labels`.
    Features(features::Args),
    /// Train the window detector on generated scenarios: writes the model and its training
    /// report.
    Train(train::Args),
    /// Evaluate the window detector on held-out scenarios (unseen architectures and GPUs)
    /// against the rules and k-means, and against the rules on real traces; writes a report.
    Eval(eval::Args),
    /// Score the rule detectors on the labelled real traces (models/real-labels.json, two label
    /// sets): precision and recall per detector and set, findings on healthy controls; writes
    /// models/RULES.md.
    /// Exit code 1 when a target is missed.
    EvalRules(eval_rules::Args),
    /// Export a trace with its analysis for Perfetto UI and chrome://tracing (--perfetto): its
    /// events, a track per finding over its evidence windows, the window model's flagged
    /// windows with their scores, the steps' time split; --steps A..B for part of a big trace.
    Export(export::Args),
    /// Print a link that carries the analysis of a trace (never the trace itself) in its
    /// fragment, within a size budget; or, with --decode, the report a link carries.
    Share(share::Args),
    /// Compare the generator's traces with the real ones of the same kind (kernel durations,
    /// kernels and ops per step, launch gaps, GPU busy, kernel classes); writes a report.
    Realism(realism::Args),
    /// Send compact summaries of the flagged windows (never the trace) to an LLM endpoint
    /// (OpenAI-compatible or Ollama) and print its diagnoses; --dry-run prints the requests.
    Explain(explain::Args),
    /// Grade an LLM endpoint: the requests about a labelled set of windows (generated, and the
    /// shared real traces' labels) sent to each --model, and a table: right anti-pattern, cited
    /// figures and names found in the evidence, key figure cited, valid structured answers,
    /// latency and tokens.
    LlmEval(llm_eval::Args),
    /// Serve the analysis as tools for agents: a Model Context Protocol server on stdio that
    /// reads traces only under the --root directories.
    Mcp(mcp::Args),
    /// (internal) Ingest one file and print timing and peak memory as JSON; used by `bench`.
    #[command(hide = true)]
    BenchChild(bench::ChildArgs),
}

/// Writes to stdout. A closed pipe (`ttap analyze … | head`) ends the program quietly, as it
/// does for other Unix tools.
pub fn out(text: &str) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_all(text.as_bytes()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing to stdout: {e}");
        std::process::exit(2);
    }
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
        Command::Bench(args) => bench::run(&args),
        Command::Synth(args) => synth::run(&args),
        Command::Features(args) => features::run(&args),
        Command::Train(args) => train::run(&args),
        Command::Eval(args) => eval::run(&args),
        Command::EvalRules(args) => eval_rules::run(&args),
        Command::Share(args) => share::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Realism(args) => realism::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::LlmEval(args) => llm_eval::run(&args),
        Command::Mcp(args) => mcp::run(&args),
        Command::BenchChild(args) => bench::child(&args),
    };
    outcome.unwrap_or_else(|e| {
        eprintln!("error: {e:#}");
        ExitCode::from(2)
    })
}
