//! `ttap synth`: write a labelled synthetic trace.

use std::path::PathBuf;
use std::process::ExitCode;

use torchtraceap::synth::{generate, AntiPattern, Config, Gpu, Injection, Model};

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
    /// An anti-pattern to inject, as DETECTOR-ID@STEP[:SEVERITY] (step 0 is the first,
    /// severity in (0, 1], default 0.5), e.g. dataloader-bottleneck@3:0.8. Repeatable.
    #[arg(long)]
    inject: Vec<String>,
    /// Add unlabelled noise: host overhead, clock drift, occasional slow batches, logged losses,
    /// stray mallocs and pageable copies.
    #[arg(long)]
    noise: bool,
    /// Where the trace goes.
    #[arg(long)]
    out: PathBuf,
    /// Where the labels go (JSON: one entry per step and phase with an injected anti-pattern).
    #[arg(long)]
    labels: Option<PathBuf>,
}

fn injection(spec: &str) -> Result<Injection, String> {
    let (id, rest) = spec
        .split_once('@')
        .ok_or_else(|| format!("'{spec}': expected DETECTOR-ID@STEP[:SEVERITY]"))?;
    let pattern = AntiPattern::parse(id).ok_or_else(|| {
        let known: Vec<&str> = AntiPattern::ALL.iter().map(|p| p.id()).collect();
        format!(
            "'{id}' is not an anti-pattern the generator injects; known: {}",
            known.join(", ")
        )
    })?;
    let (step, severity) = rest.split_once(':').unwrap_or((rest, "0.5"));
    let step = step
        .parse()
        .map_err(|_| format!("'{spec}': the step must be a whole number"))?;
    let severity: f64 = severity
        .parse()
        .map_err(|_| format!("'{spec}': the severity must be a number in (0, 1]"))?;
    if !(severity > 0.0 && severity <= 1.0) {
        return Err(format!("'{spec}': the severity must be in (0, 1]"));
    }
    Ok(Injection {
        pattern,
        step,
        severity,
    })
}

fn config(args: &Args) -> Result<Config, String> {
    let model = Model::parse(&args.model).ok_or_else(|| {
        let known: Vec<&str> = Model::ALL.iter().map(|m| m.id()).collect();
        format!(
            "unknown model '{}': use one of {}",
            args.model,
            known.join(", ")
        )
    })?;
    let gpu = Gpu::parse(&args.gpu).ok_or_else(|| {
        let known: Vec<&str> = Gpu::ALL.iter().map(|g| g.id()).collect();
        format!(
            "unknown GPU '{}': use one of {}",
            args.gpu,
            known.join(", ")
        )
    })?;
    if args.steps == 0 || args.batch == 0 {
        return Err("--steps and --batch must be at least 1".into());
    }
    let injections = args
        .inject
        .iter()
        .map(|s| injection(s))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(i) = injections.iter().find(|i| i.step >= args.steps) {
        return Err(format!(
            "an injection at step {} is past the last step ({})",
            i.step,
            args.steps - 1
        ));
    }
    Ok(Config {
        model,
        gpu,
        training: !args.inference,
        steps: args.steps,
        batch: args.batch,
        seed: args.seed,
        injections,
        noise: args.noise,
    })
}

pub fn run(args: &Args) -> ExitCode {
    let c = match config(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: ttap synth: {e}");
            return ExitCode::from(2);
        }
    };
    let generated = generate(&c);
    let write = |path: &PathBuf, text: &str| {
        std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
    };
    let labels = serde_json::to_string_pretty(&generated.labels).expect("labels serialize");
    let result = write(&args.out, &generated.trace).and_then(|()| match &args.labels {
        Some(path) => write(path, &labels),
        None => Ok(()),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: ttap synth: {e}");
            ExitCode::from(2)
        }
    }
}
