//! `ttap-dev synth`: write a labelled synthetic trace, or the rank traces of a data-parallel run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context};

use torchtraceap_dev::synth::{
    generate, generate_ranks, AntiPattern, Config, DataParallel, Generated, Gpu, Injection, Model,
};

#[derive(clap::Args)]
pub struct Args {
    /// resnet50, vit_b16, swin_t, detr or video3d.
    #[arg(long, default_value = "resnet50")]
    model: String,
    /// v100, t4, a100, rtx4090, h100 or mi300x.
    #[arg(long, default_value = "a100")]
    gpu: String,
    /// Inference steps (forward only) instead of training steps.
    #[arg(long)]
    inference: bool,
    #[arg(long, default_value_t = 6)]
    steps: u32,
    #[arg(long, default_value_t = 64)]
    batch: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// An anti-pattern to inject, as DETECTOR-ID@STEP[:SEVERITY][@rankR] (step 0 is the first,
    /// severity in (0, 1], default 0.5; with --ranks, @rankR injects on rank R only, e.g. a
    /// straggler: dataloader-bottleneck@3:0.8@rank2). Repeatable.
    #[arg(long)]
    inject: Vec<String>,
    /// Write the N rank traces of one data-parallel (DDP) run: gradient all-reduce on an NCCL
    /// stream during backward, per-rank skew; --out (and --labels) then name a directory, or a
    /// pattern with {rank}.
    #[arg(long)]
    ranks: Option<u32>,
    /// Add unlabelled noise: host overhead, clock drift, occasional slow batches, logged losses,
    /// stray mallocs and pageable copies.
    #[arg(long)]
    noise: bool,
    /// Where the trace goes (with --ranks: a directory, which gets rank-R.pt.trace.json, or a
    /// pattern with {rank}).
    #[arg(long)]
    out: PathBuf,
    /// Where the labels go (JSON: one entry per step and phase with an injected anti-pattern).
    #[arg(long)]
    labels: Option<PathBuf>,
}

/// An injection and the rank it targets (`None`: every rank).
fn injection(spec: &str) -> anyhow::Result<(Option<u32>, Injection)> {
    let (id, rest) = spec
        .split_once('@')
        .ok_or_else(|| anyhow!("'{spec}': expected DETECTOR-ID@STEP[:SEVERITY][@rankR]"))?;
    let (rest, rank) = match rest.split_once("@rank") {
        Some((rest, r)) => (
            rest,
            Some(
                r.parse()
                    .map_err(|_| anyhow!("'{spec}': the rank must be a whole number"))?,
            ),
        ),
        None => (rest, None),
    };
    let pattern = AntiPattern::parse(id).ok_or_else(|| {
        let known: Vec<&str> = AntiPattern::ALL.iter().map(|p| p.id()).collect();
        anyhow!(
            "'{id}' is not an anti-pattern the generator injects; known: {}",
            known.join(", ")
        )
    })?;
    let (step, severity) = rest.split_once(':').unwrap_or((rest, "0.5"));
    let step = step
        .parse()
        .map_err(|_| anyhow!("'{spec}': the step must be a whole number"))?;
    let severity: f64 = severity
        .parse()
        .map_err(|_| anyhow!("'{spec}': the severity must be a number in (0, 1]"))?;
    if !(severity > 0.0 && severity <= 1.0) {
        bail!("'{spec}': the severity must be in (0, 1]");
    }
    Ok((
        rank,
        Injection {
            pattern,
            step,
            severity,
        },
    ))
}

fn config(args: &Args) -> anyhow::Result<(Config, DataParallel)> {
    let model = Model::parse(&args.model).ok_or_else(|| {
        let known: Vec<&str> = Model::ALL.iter().map(|m| m.id()).collect();
        anyhow!(
            "unknown model '{}': use one of {}",
            args.model,
            known.join(", ")
        )
    })?;
    let gpu = Gpu::parse(&args.gpu).ok_or_else(|| {
        let known: Vec<&str> = Gpu::ALL.iter().map(|g| g.id()).collect();
        anyhow!(
            "unknown GPU '{}': use one of {}",
            args.gpu,
            known.join(", ")
        )
    })?;
    if args.steps == 0 || args.batch == 0 {
        bail!("--steps and --batch must be at least 1");
    }
    let world_size = args.ranks.unwrap_or(1);
    if world_size == 0 {
        bail!("--ranks must be at least 1");
    }
    let all = args
        .inject
        .iter()
        .map(|s| injection(s))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some((_, i)) = all.iter().find(|(_, i)| i.step >= args.steps) {
        bail!(
            "an injection at step {} is past the last step ({})",
            i.step,
            args.steps - 1
        );
    }
    match all.iter().find_map(|(r, _)| *r) {
        Some(r) if args.ranks.is_none() => {
            bail!("@rank{r} needs --ranks");
        }
        Some(r) if r >= world_size => {
            bail!("@rank{r} is past the last rank ({})", world_size - 1);
        }
        _ => {}
    }
    let injections = all
        .iter()
        .filter(|(r, _)| r.is_none())
        .map(|(_, i)| *i)
        .collect();
    let rank_injections = all.iter().filter_map(|(r, i)| r.map(|r| (r, *i))).collect();
    let c = Config {
        model,
        gpu,
        training: !args.inference,
        steps: args.steps,
        batch: args.batch,
        seed: args.seed,
        injections,
        noise: args.noise,
    };
    Ok((
        c,
        DataParallel {
            world_size,
            rank_injections,
        },
    ))
}

/// Rank `rank`'s file: `{rank}` in `base` replaced, or `base` taken as a directory (created)
/// holding `rank-R.SUFFIX`.
fn rank_path(base: &Path, rank: u32, suffix: &str) -> anyhow::Result<PathBuf> {
    let text = base.to_string_lossy();
    if text.contains("{rank}") {
        return Ok(PathBuf::from(text.replace("{rank}", &rank.to_string())));
    }
    std::fs::create_dir_all(base)
        .with_context(|| format!("creating the directory {}", base.display()))?;
    Ok(base.join(format!("rank-{rank}.{suffix}")))
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn write_generated(
    generated: &Generated,
    out: &Path,
    labels: Option<&PathBuf>,
) -> anyhow::Result<()> {
    write(out, &generated.trace)?;
    match labels {
        Some(path) => write(
            path,
            &serde_json::to_string_pretty(&generated.labels).expect("labels serialize"),
        ),
        None => Ok(()),
    }
}

fn synthesize(args: &Args) -> anyhow::Result<()> {
    let (c, dp) = config(args)?;
    if args.ranks.is_none() {
        return write_generated(&generate(&c), &args.out, args.labels.as_ref());
    }
    for (r, generated) in (0..).zip(generate_ranks(&c, &dp)) {
        let out = rank_path(&args.out, r, "pt.trace.json")?;
        let labels = match &args.labels {
            Some(base) => Some(rank_path(base, r, "labels.json")?),
            None => None,
        };
        write_generated(&generated, &out, labels.as_ref())?;
    }
    Ok(())
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    synthesize(args).context("ttap-dev synth")?;
    Ok(ExitCode::SUCCESS)
}
