//! Generated traces reduced to profiles, for the tests of comparisons, runs and their links
//! (`compare.rs`, `run.rs`, `view_link.rs`).

use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect;
use torchtraceap::profile::Profile;
use torchtraceap_dev::synth::{Config, Gpu, Injection, Model};

/// The profile of a trace's bytes, as `ttap compare` and the app make it.
pub fn profile_of_bytes(label: &str, bytes: &[u8]) -> Profile {
    let ingested = ingest_bytes(bytes, IngestOptions::default()).expect("the trace ingests");
    let a = Analysis::new(&ingested.trace);
    Profile::new(label, &a, &detect::run(&a).findings)
}

/// ResNet-50 training on an A100, batch 64, 8 steps.
pub fn resnet50(seed: u64, injections: Vec<Injection>, noise: bool) -> Config {
    Config {
        model: Model::ResNet50,
        gpu: Gpu::A100,
        training: true,
        steps: 8,
        batch: 64,
        seed,
        injections,
        noise,
    }
}
