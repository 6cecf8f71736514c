//! What to generate: the configuration, the anti-patterns that can be injected and the labels
//! that say where, random scenarios for training, and the seeded random numbers.

use super::gpu::Gpu;
use super::zoo::Model;
use torchtraceap::model::AntiPattern;

/// One anti-pattern at one step (0-based), with a severity in (0, 1].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Injection {
    pub pattern: AntiPattern,
    pub step: u32,
    pub severity: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub model: Model,
    pub gpu: Gpu,
    pub training: bool,
    pub steps: u32,
    pub batch: u32,
    pub seed: u64,
    pub injections: Vec<Injection>,
    /// Realistic noise that is not labelled: host overhead over the whole trace (CPU ops and
    /// launches 1× to 8× slower: profiler overhead, a slow host), 0.1–0.5 µs between queued
    /// kernels, a host that runs up to 50 ms
    /// ahead of the GPU between steps, no phase ranges in half the healthy inference traces
    /// (their windows are slices), per-step GPU clock drift (±10%) and, each in about one step
    /// in four, a slow batch from the DataLoader (up to 4× its usual
    /// time), one `.item()` in the forward pass (a logged loss), one to three device mallocs, and
    /// the targets copied from pageable memory.
    pub noise: bool,
}

impl Config {
    /// The tests' usual case: ResNet-50 training on an A100, batch 64, seed 3, `steps` steps,
    /// nothing injected, no noise (the fields are public: change what a test needs).
    pub fn resnet50_a100(steps: u32) -> Config {
        Config {
            model: Model::ResNet50,
            gpu: Gpu::A100,
            training: true,
            steps,
            batch: 64,
            seed: 3,
            injections: Vec::new(),
            noise: false,
        }
    }
}

/// Where an anti-pattern was injected: a step and a phase of it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Label {
    /// `N` of `ProfilerStep#N`.
    pub step: i64,
    /// The window phase (as `window::Phase::label`).
    pub phase: &'static str,
    /// The detector id of the anti-pattern.
    pub pattern: &'static str,
}

/// A data-parallel run (`generate_ranks`): its size, and the injections that only one rank gets
/// (rank, injection), such as a straggler's DataLoader stall.
#[derive(Clone, Debug, PartialEq)]
pub struct DataParallel {
    pub world_size: u32,
    pub rank_injections: Vec<(u32, Injection)>,
}

/// The first step's number.
pub const FIRST_STEP: i64 = 10;

/// SplitMix64: a small, well-known generator, so that the same seed gives the same trace on
/// every platform.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `[0, 1)`.
    pub(super) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A factor in `[1 - spread, 1 + spread]`.
    pub(super) fn jitter(&mut self, spread: f64) -> f64 {
        1.0 + spread * (2.0 * self.unit() - 1.0)
    }

    /// One of `items`.
    pub(super) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize]
    }
}

/// A random scenario, for training and evaluating the window detector: one of `models` on one of
/// `gpus`, training (three times in four) or inference, a batch of 16 to 128, 6 to 8 steps, and
/// up to three anti-patterns, each at its own steady-state step, with severities in [0.1, 1].
/// The same seed gives the same scenario.
pub fn scenario(models: &[Model], gpus: &[Gpu], seed: u64) -> Config {
    let mut rng = Rng(seed ^ 0x5CE4_A210_5EED_0001);
    let model = rng.pick(models);
    let gpu = rng.pick(gpus);
    let training = rng.unit() < 0.75;
    let batch = rng.pick(&[16, 32, 64, 128]);
    let steps = rng.pick(&[6, 7, 8]);
    let count = rng.pick(&[0, 1, 1, 2, 2, 3]);
    let mut free: Vec<u32> = (1..steps).collect();
    let injections = (0..count)
        .map(|_| {
            let step = free.remove((rng.next() % free.len() as u64) as usize);
            Injection {
                pattern: rng.pick(&AntiPattern::ALL),
                step,
                severity: 0.1 + 0.9 * rng.unit(),
            }
        })
        .collect();
    Config {
        model,
        gpu,
        training,
        steps,
        batch,
        seed,
        injections,
        noise: true,
    }
}
