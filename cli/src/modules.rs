//! `ttap modules FILE`: GPU and CPU time by the model's modules, as a tree.

use std::fmt::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use torchtraceap::modules::ModuleTree;
use torchtraceap::pct;
use torchtraceap::share::quoted;

use torchtraceap_cli::read::{read_trace, CaptureArg};

#[derive(clap::Args)]
pub struct Args {
    /// A trace file recorded with module frames (`with_modules`/`with_stack`) or
    /// `record_function` labels.
    file: PathBuf,
    /// Deepest level shown (0: the top-level modules only).
    #[arg(long, default_value_t = 6)]
    depth: usize,
    /// Modules under this share of the GPU time (percent) are left out of the text.
    #[arg(long, default_value_t = 1.0)]
    min_pct: f64,
    /// Print the whole tree as JSON instead.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    capture: CaptureArg,
}

/// The tree as indented text, keeping nodes within `depth` and with at least `min_pct` of the
/// GPU time (or of the CPU time of the top-level frames, on traces without GPU work).
pub fn text(tree: &ModuleTree, depth: usize, min_pct: f64) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "GPU work by module (kernels counted for the module whose op launched them; backward for \
         the module that ran forward): {:.3} ms in all, {:.1} % inside module frames\n",
        tree.gpu_ns as f64 / 1e6,
        pct(tree.gpu_ns - tree.outside_gpu_ns, tree.gpu_ns)
    );
    let _ = writeln!(
        o,
        "{:>10} {:>7} {:>9} {:>10} {:>7} {:>8}  module",
        "GPU ms", "GPU %", "backward", "CPU ms", "calls", "kernels"
    );
    let cpu_total: i64 = tree
        .nodes
        .iter()
        .filter(|n| n.parent.is_none())
        .map(|n| n.cpu_ns)
        .sum();
    let mut hidden = 0;
    for n in &tree.nodes {
        let share = if tree.gpu_ns > 0 {
            pct(n.gpu_ns, tree.gpu_ns)
        } else {
            pct(n.cpu_ns, cpu_total)
        };
        if n.depth > depth || share < min_pct {
            hidden += 1;
            continue;
        }
        let _ = writeln!(
            o,
            "{:>10.3} {:>6.1}% {:>8.0}% {:>10.3} {:>7} {:>8}  {}{}{}",
            n.gpu_ns as f64 / 1e6,
            pct(n.gpu_ns, tree.gpu_ns),
            pct(n.backward_gpu_ns, n.gpu_ns),
            n.cpu_ns as f64 / 1e6,
            n.calls,
            n.kernels,
            "  ".repeat(n.depth),
            quoted(&n.name),
            if n.module { "" } else { " (label)" }
        );
    }
    let _ = writeln!(
        o,
        "\n{hidden} frames below {min_pct} % or deeper than {depth} not shown (--min-pct, --depth)"
    );
    o
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let ingested = read_trace(&args.file)?;
    let ingested = match args.capture.read()? {
        Some(beside) => beside.tie(ingested),
        None => ingested,
    };
    let Some(tree) = ModuleTree::of(&ingested.trace) else {
        anyhow::bail!(
            "{}: no module frames: record with torch.profiler.profile(with_modules=True) \
             or with_stack=True, or label regions with torch.profiler.record_function",
            args.file.display()
        );
    };
    if args.json {
        crate::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&tree).expect("module trees serialize")
        ));
    } else {
        crate::out(&text(&tree, args.depth, args.min_pct));
    }
    Ok(ExitCode::SUCCESS)
}
