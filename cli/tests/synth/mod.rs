//! Generated traces written where the tests' `ttap` reads them, as `ttap-dev synth` (in
//! `dev-cli/`, which `ttap`'s package does not build) writes them: one file, or a folder of
//! `rank-R.pt.trace.json`.

use std::path::Path;

use torchtraceap_dev::synth::{
    generate, generate_ranks, AntiPattern, Config, DataParallel, Injection,
};

/// `ttap-dev synth`'s defaults (ResNet-50 training on an A100, batch 64, no noise) with these
/// steps, seed and injections.
pub fn config(steps: u32, seed: u64, injections: Vec<Injection>) -> Config {
    Config {
        seed,
        injections,
        ..Config::resnet50_a100(steps)
    }
}

/// `pattern` at `step` with `severity`.
pub fn at(pattern: AntiPattern, step: u32, severity: f64) -> Injection {
    Injection {
        pattern,
        step,
        severity,
    }
}

/// Writes `c`'s trace to `out`; or, with `ranks`, the traces of a data-parallel run into the
/// folder `out` (created), as `rank-R.pt.trace.json`.
pub fn synth(out: &Path, c: &Config, ranks: Option<DataParallel>) {
    let Some(dp) = ranks else {
        std::fs::write(out, generate(c).trace).unwrap();
        return;
    };
    std::fs::create_dir_all(out).unwrap();
    for (r, generated) in generate_ranks(c, &dp).into_iter().enumerate() {
        std::fs::write(out.join(format!("rank-{r}.pt.trace.json")), generated.trace).unwrap();
    }
}
