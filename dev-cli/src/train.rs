//! `ttap-dev train`: fit the window detector on generated scenarios and write the model with its
//! training report.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;

use torchtraceap::internals::features::NAMES;
use torchtraceap::ml::base_set::BaseSet;
use torchtraceap::ml::fit::Params;
use torchtraceap::model::AntiPattern;
use torchtraceap_dev::ml::train::{train as train_model, Recipe, TRAIN_GPUS, TRAIN_MODELS};

#[derive(clap::Args)]
pub struct Args {
    /// How many generated scenarios (traces) to train on.
    #[arg(long, default_value_t = Recipe::COMMITTED.traces)]
    traces: usize,
    /// The first scenario's seed (the others follow it).
    #[arg(long, default_value_t = Recipe::COMMITTED.seed)]
    seed: u64,
    /// Trees per forest.
    #[arg(long, default_value_t = Params::COMMITTED.trees)]
    trees: u16,
    #[arg(long, default_value_t = Params::COMMITTED.max_depth)]
    max_depth: u16,
    /// Where the model goes.
    #[arg(long, default_value = "models/window-forest.json")]
    out: PathBuf,
    /// Where the base set goes: the training windows' features and labels (every anomalous one,
    /// one healthy one in three), which the web app retrains on with the user's kept labels.
    #[arg(long, default_value = "www/models/base-set.bin.gz")]
    base_set: PathBuf,
    /// Where the training report (Markdown) goes.
    #[arg(long, default_value = "models/TRAINING.md")]
    report: PathBuf,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    train(args).context("ttap-dev train")?;
    Ok(ExitCode::SUCCESS)
}

fn train(args: &Args) -> anyhow::Result<()> {
    let started = Instant::now();
    let params = Params {
        trees: args.trees,
        max_depth: args.max_depth,
        ..Params::COMMITTED
    };
    let recipe = Recipe {
        traces: args.traces,
        seed: args.seed,
        params,
    };
    let (model, rows) = train_model(&recipe)?;
    let elapsed = started.elapsed();
    let json = model.to_json();
    let write = |path: &PathBuf, bytes: &[u8]| {
        std::fs::write(path, bytes)
            .with_context(|| format!("writing {} (does its folder exist?)", path.display()))
    };
    write(&args.out, json.as_bytes())?;
    let windows: Vec<&[f32]> = rows.iter().map(|r| r.features.values.as_slice()).collect();
    let labels: Vec<_> = rows.iter().map(|r| r.label).collect();
    let base = BaseSet::sample(&windows, &labels, 3);
    write(&args.base_set, &base.encode())?;
    let per_kind: Vec<String> = AntiPattern::ALL
        .iter()
        .map(|k| {
            let n = rows.iter().filter(|r| r.label == Some(*k)).count();
            format!("| `{}` | {n} |", k.id())
        })
        .collect();
    let nodes =
        |f: &torchtraceap::ml::Forest| f.trees.iter().map(|t| t.feature.len()).sum::<usize>();
    let names = |list: &[&str]| list.join(", ");
    let report = format!(
        "# Window detector: training report\n\n\
         Written by `{command}` (generator version {generator}; the model file records both).\n\n\
         - Scenarios: {traces} generated traces (`synth::scenario`, seeds {seed}..{end}) of {models} on {gpus}; \
         training three times in four, batch 16–128, 6–8 steps, 0–3 anti-patterns each at its own steady-state step, severity 0.1–1, with unlabelled noise (`Config::noise`).\n\
         - Windows: {windows}, of which {anomalous} anomalous ({share:.1}%).\n\
         - Forests: {trees} trees each, depth ≤ {depth}, ≥ {leaf} samples per leaf, √{features} = {tried} features tried per split (smartcore 0.7); \
         anomaly forest {anodes} nodes, type forest {knodes} nodes.\n\
         - Model file: {bytes} bytes.\n\
         - Time: {secs:.1} s generating, extracting features and fitting.\n\n\
         | anomalous windows by type | count |\n|---|---|\n{per_kind}\n",
        traces = args.traces,
        seed = args.seed,
        end = args.seed + args.traces as u64 - 1,
        trees = params.trees,
        depth = params.max_depth,
        leaf = params.min_samples_leaf,
        models = names(&TRAIN_MODELS.map(|m| m.id())),
        gpus = names(&TRAIN_GPUS.map(|g| g.id())),
        windows = rows.len(),
        anomalous = rows.iter().filter(|r| r.label.is_some()).count(),
        share = 100.0 * rows.iter().filter(|r| r.label.is_some()).count() as f64 / rows.len().max(1) as f64,
        anodes = nodes(&model.anomaly),
        knodes = nodes(&model.kind),
        bytes = json.len(),
        secs = elapsed.as_secs_f64(),
        command = recipe.command(),
        generator = model.provenance.generator,
        features = NAMES.len(),
        tried = (NAMES.len() as f64).sqrt().floor(),
        per_kind = per_kind.join("\n"),
    );
    write(&args.report, report.as_bytes())?;
    eprintln!(
        "ttap-dev train: {} windows from {} scenarios; model {} bytes in {}; report in {}",
        rows.len(),
        args.traces,
        json.len(),
        args.out.display(),
        args.report.display()
    );
    Ok(())
}
