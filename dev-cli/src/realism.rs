//! `ttap-dev realism`: the generator's traces next to real ones of the same kind (CNN training,
//! vision inference), statistic by statistic; written as a Markdown report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap_dev::realism::{KernelClass, Quantiles, RealTrace, Stats, Workload, REAL_TRACES};
use torchtraceap_dev::synth::{generate, generate_ranks, Config, DataParallel, Gpu, Model};

use torchtraceap_cli::read::read_file;

#[derive(clap::Args)]
pub struct Args {
    /// The shared real traces (the files of `REAL` below it).
    #[arg(long, default_value = "../shared/traces")]
    real: PathBuf,
    /// Where the report (Markdown) goes.
    #[arg(long, default_value = "models/REALISM.md")]
    out: PathBuf,
}

/// The generated traces of a kind of workload: models and mode.
fn generated_kind(kind: Workload) -> (&'static [Model], bool) {
    match kind {
        Workload::CnnTraining => (&[Model::ResNet50, Model::Video3d], true),
        Workload::VisionInference => (&Model::ALL, false),
    }
}

/// A model on a GPU: 6 steps of a batch of 64, with the unlabelled noise (`Config::noise`: each
/// seed draws its own host overhead) and no injection.
fn config(model: Model, gpu: Gpu, training: bool, seed: u64) -> Config {
    Config {
        model,
        gpu,
        training,
        steps: 6,
        batch: 64,
        seed,
        injections: Vec::new(),
        noise: true,
    }
}

fn stats(c: &Config, trace: &str) -> anyhow::Result<Stats> {
    let ingested = ingest_bytes(trace.as_bytes(), IngestOptions::default())
        .with_context(|| format!("the generated {} trace on {}", c.model.id(), c.gpu.id()))?;
    Ok(Stats::of(&ingested.trace))
}

/// Ranks of the generated data-parallel runs, as in the real DDP traces.
const WORLD_SIZE: u32 = 8;

/// One statistic: its name, how to read it from `Stats`, and whether it is a share (compared by
/// percentage points) or a magnitude (compared by factor).
type Statistic = (&'static str, fn(&Stats) -> Option<f64>, bool);

fn q(s: Option<Quantiles>, pick: fn(&Quantiles) -> f64) -> Option<f64> {
    s.as_ref().map(pick)
}

const STATISTICS: [Statistic; 20] = [
    ("kernels per step", |s| Some(s.kernels_per_step), false),
    ("CPU ops per step", |s| Some(s.cpu_ops_per_step), false),
    ("kernel p10 (µs)", |s| q(s.kernel_us, |q| q.p10), false),
    ("kernel p50 (µs)", |s| q(s.kernel_us, |q| q.p50), false),
    ("kernel p90 (µs)", |s| q(s.kernel_us, |q| q.p90), false),
    ("kernel p99 (µs)", |s| q(s.kernel_us, |q| q.p99), false),
    (
        "launch gap p10 (µs)",
        |s| q(s.launch_gap_us, |q| q.p10),
        false,
    ),
    (
        "launch gap p50 (µs)",
        |s| q(s.launch_gap_us, |q| q.p50),
        false,
    ),
    (
        "launch gap p90 (µs)",
        |s| q(s.launch_gap_us, |q| q.p90),
        false,
    ),
    (
        "launch delay p50 (µs)",
        |s| q(s.launch_delay_us, |q| q.p50),
        false,
    ),
    (
        "launch delay p90 (µs)",
        |s| q(s.launch_delay_us, |q| q.p90),
        false,
    ),
    ("GPU busy", |s| Some(s.gpu_busy), true),
    ("conv share", |s| Some(s.share(KernelClass::Conv)), true),
    ("gemm share", |s| Some(s.share(KernelClass::Gemm)), true),
    (
        "attention share",
        |s| Some(s.share(KernelClass::Attention)),
        true,
    ),
    ("norm share", |s| Some(s.share(KernelClass::Norm)), true),
    (
        "elementwise share",
        |s| Some(s.share(KernelClass::Elementwise)),
        true,
    ),
    ("layout share", |s| Some(s.share(KernelClass::Layout)), true),
    (
        "collective share",
        |s| Some(s.share(KernelClass::Collective)),
        true,
    ),
    ("other share", |s| Some(s.share(KernelClass::Other)), true),
];

fn cell(v: Option<f64>, share: bool) -> String {
    match v {
        None => "-".into(),
        Some(v) if share => format!("{:.0}%", 100.0 * v),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
    }
}

/// Where `value` lies against the real range: within it, or by what factor (magnitudes) or how
/// many percentage points (shares) it is off.
fn verdict(value: f64, (lo, hi): (f64, f64), share: bool) -> String {
    if value >= lo && value <= hi {
        return "within".into();
    }
    let bound = if value < lo { lo } else { hi };
    let side = if value < lo { "below" } else { "above" };
    if share {
        format!("{:.1} pp {side}", 100.0 * (value - bound).abs())
    } else if value > 0.0 && bound > 0.0 {
        let f = if value < lo { lo / value } else { value / hi };
        format!("{f:.1}× {side}")
    } else {
        side.into()
    }
}

fn range(values: &[f64]) -> Option<(f64, f64)> {
    let lo = values.iter().copied().reduce(f64::min)?;
    let hi = values.iter().copied().reduce(f64::max)?;
    Some((lo, hi))
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

fn table_header(o: &mut String, first: &str) {
    let _ = write!(o, "| {first} |");
    for (name, _, _) in STATISTICS {
        let _ = write!(o, " {name} |");
    }
    let _ = write!(o, "\n|---|");
    for _ in STATISTICS {
        let _ = write!(o, "---|");
    }
    o.push('\n');
}

fn table_row(o: &mut String, first: &str, s: &Stats) {
    let _ = write!(o, "| {first} |");
    for (_, get, share) in STATISTICS {
        let _ = write!(o, " {} |", cell(get(s), share));
    }
    o.push('\n');
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let text = report(&args.real).context("ttap-dev realism")?;
    std::fs::write(&args.out, text)
        .with_context(|| format!("ttap-dev realism: writing {}", args.out.display()))?;
    Ok(ExitCode::SUCCESS)
}

fn report(dir: &Path) -> anyhow::Result<String> {
    let mut real: Vec<(Workload, String, Stats)> = Vec::new();
    let mut o = String::from(
        "# The generator against real traces\n\n\
         Written by `ttap-dev realism`. Statistics of each trace over its steps (`realism::Stats`): \
         kernels launched per step, CPU ops per step, kernel durations, start-to-start gaps \
         between kernel launches on a thread, launch-to-kernel delays, GPU busy share of the \
         step time, and the share of kernel time per kernel class. Generated traces: 6 steps of a \
         batch of 64 with the unlabelled noise, no injection, seeds 1, 2, … in table order. \
         ViT-B/16, Swin-T and DETR training have no real counterpart among the shared traces \
         (the one transformer training trace is a tiny text model); they are compared as \
         inference only.\n",
    );
    let _ = writeln!(o, "\n## Real traces\n");
    table_header(&mut o, "trace (GPU, workload, kind)");
    let mut missing = Vec::new();
    for RealTrace {
        path,
        gpu,
        workload,
        kind,
    } in REAL_TRACES
    {
        let full = dir.join(path);
        if !full.exists() {
            missing.push(path);
            continue;
        }
        let ingested =
            read_file(&full, IngestOptions::default()).with_context(|| path.to_string())?;
        let s = Stats::of(&ingested.trace);
        let name = path.rsplit('/').next().unwrap_or(path);
        let label = format!("`{name}` ({gpu}, {workload}, {})", kind.label());
        table_row(&mut o, &label, &s);
        real.push((kind, label, s));
    }
    if !missing.is_empty() {
        let _ = writeln!(
            o,
            "\nNot found under {} (left out): {}.",
            dir.display(),
            missing.join(", ")
        );
    }
    let mut generated_rows: Vec<(Workload, Model, Gpu, Stats)> = Vec::new();
    for kind in Workload::ALL {
        let (models, training) = generated_kind(kind);
        for &model in models {
            for gpu in Gpu::ALL {
                let c = config(model, gpu, training, generated_rows.len() as u64 + 1);
                let s = stats(&c, &generate(&c).trace)?;
                generated_rows.push((kind, model, gpu, s));
            }
        }
    }
    let _ = writeln!(o, "\n## Generated traces\n");
    table_header(&mut o, "model, GPU, kind");
    for (kind, model, gpu, s) in &generated_rows {
        table_row(
            &mut o,
            &format!("{} on {}, {}", model.id(), gpu.id(), kind.label()),
            s,
        );
    }
    let _ = writeln!(
        o,
        "\n## Verdicts\n\nPer kind and statistic: the range over the real traces of that kind, \
         the range over the generated ones, and where the generated median lies against the real \
         range (within it, by what factor it is off, or by how many percentage points for \
         shares)."
    );
    for kind in Workload::ALL {
        let reals: Vec<&Stats> = real
            .iter()
            .filter(|(k, _, _)| *k == kind)
            .map(|(_, _, s)| s)
            .collect();
        let gens: Vec<&Stats> = generated_rows
            .iter()
            .filter(|r| r.0 == kind)
            .map(|r| &r.3)
            .collect();
        let _ = writeln!(
            o,
            "\n### {} ({} real, {} generated)\n\n| statistic | real range | generated range | generated median | verdict |\n|---|---|---|---|---|",
            kind.label(),
            reals.len(),
            gens.len()
        );
        for (name, get, share) in STATISTICS {
            let rv: Vec<f64> = reals.iter().filter_map(|s| get(s)).collect();
            let gv: Vec<f64> = gens.iter().filter_map(|s| get(s)).collect();
            let show = |r: Option<(f64, f64)>| {
                r.map_or("-".into(), |(lo, hi)| {
                    format!("{} – {}", cell(Some(lo), share), cell(Some(hi), share))
                })
            };
            let mid = median(gv.clone());
            let v = match (mid, range(&rv)) {
                (Some(m), Some(r)) => verdict(m, r, share),
                _ => "-".into(),
            };
            let _ = writeln!(
                o,
                "| {name} | {} | {} | {} | {v} |",
                show(range(&rv)),
                show(range(&gv)),
                cell(mid, share)
            );
        }
    }
    data_parallel_section(&mut o, &real)?;
    Ok(o)
}

/// The real DDP training traces next to rank 0 of generated 8-rank ResNet-50 runs
/// (`synth::generate_ranks`), for the collective kernels and their share.
fn data_parallel_section(o: &mut String, real: &[(Workload, String, Stats)]) -> anyhow::Result<()> {
    let _ = writeln!(
        o,
        "\n## Data-parallel runs\n\nThe real DDP training traces and rank 0 of a generated \
         {WORLD_SIZE}-rank ResNet-50 training run (`ttap-dev synth --ranks {WORLD_SIZE}`, no \
         straggler; seed 1, so each GPU draws the same host overhead).\n"
    );
    table_header(o, "trace");
    for (_, label, s) in real.iter().filter(|(_, label, _)| label.contains("DDP")) {
        table_row(o, label, s);
    }
    for gpu in [Gpu::V100, Gpu::A100, Gpu::Mi300x] {
        let c = config(Model::ResNet50, gpu, true, 1);
        let dp = DataParallel {
            world_size: WORLD_SIZE,
            rank_injections: Vec::new(),
        };
        let ranks = generate_ranks(&c, &dp);
        let s = stats(&c, &ranks[0].trace)?;
        table_row(
            o,
            &format!("resnet50 on {}, rank 0 of {WORLD_SIZE}", gpu.id()),
            &s,
        );
    }
    Ok(())
}
