//! `ttap-dev`: the developers' commands (the generator, the window model's training and
//! evaluations, the rules' scores, realism, ingest benchmarks, the LLM evaluation), over the
//! library and the development crate. Never shipped to users: `ttap` (`cli/`) does not link
//! the development crate (`tests/layers.rs`).

mod bench;
mod eval;
mod eval_rules;
mod features;
mod llm_eval;
mod realism;
mod synth;
mod train;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
// `crate::out` for the commands: stdout, quiet on a closed pipe.
use torchtraceap_cli::out;

#[derive(Parser)]
#[command(
    name = "ttap-dev",
    version,
    about = "TorchTraceAP's development tools: generate labelled traces, train and evaluate the window model, score the rules"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
    /// Compare the generator's traces with the real ones of the same kind (kernel durations,
    /// kernels and ops per step, launch gaps, GPU busy, kernel classes); writes a report.
    Realism(realism::Args),
    /// Measure ingest throughput and peak memory on a large trace built from a real one, against
    /// serde_json skimming the same bytes.
    Bench(bench::Args),
    /// Grade an LLM endpoint: the requests about a labelled set of windows (generated, and the
    /// shared real traces' labels) sent to each --model, and a table: right anti-pattern, cited
    /// figures and names found in the evidence, key figure cited, valid structured answers,
    /// latency and tokens.
    LlmEval(llm_eval::Args),
    /// (internal) Ingest one file and print timing and peak memory as JSON; used by `bench`.
    #[command(hide = true)]
    BenchChild(bench::ChildArgs),
}

/// Runs the command: its exit code (0, or 1 where a target is missed), or its error, printed
/// after `error: ` with the context it gathered, and exit code 2.
fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Synth(args) => synth::run(&args),
        Command::Features(args) => features::run(&args),
        Command::Train(args) => train::run(&args),
        Command::Eval(args) => eval::run(&args),
        Command::EvalRules(args) => eval_rules::run(&args),
        Command::Realism(args) => realism::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::LlmEval(args) => llm_eval::run(&args),
        Command::BenchChild(args) => bench::child(&args),
    };
    outcome.unwrap_or_else(|e| {
        eprintln!("error: {e:#}");
        ExitCode::from(2)
    })
}
