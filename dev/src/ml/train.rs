//! Training the window detector (native only): labelled windows from the generator's scenarios,
//! the committed recipe, and the model it makes ([`torchtraceap::ml::fit`] fits the forests).

use crate::synth::{self, Config, Gpu, Label};
use torchtraceap::ingest::{ingest_bytes, IngestOptions, Ingested};
use torchtraceap::internals::features::{of_trace, WindowFeatures};
use torchtraceap::internals::window::split;
use torchtraceap::ml::fit::{fit, Params};
use torchtraceap::ml::{MlError, Model, Provenance};
use torchtraceap::model::AntiPattern;

/// The architectures and GPUs the committed model is trained on…
pub const TRAIN_MODELS: [synth::Model; 5] = [
    synth::Model::ResNet50,
    synth::Model::VitB16,
    synth::Model::SwinT,
    synth::Model::Detr,
    synth::Model::Video3d,
];
/// Every GPU the generator knows but the held-out generation, the last of `Gpu::ALL`.
pub const TRAIN_GPUS: [Gpu; 6] = *Gpu::ALL.first_chunk().expect("7 GPUs");
/// …and the ones it is evaluated on: families whose layers run kernels no training family runs
/// (depthwise convolutions; SiLU, upsampling and concatenation), on a GPU generation whose
/// library kernels are named like no training GPU's (`sm100_xmma_*`, `nvjet_*`, cuDNN's fused
/// attention).
pub const HELD_OUT_MODELS: [synth::Model; 2] = [synth::Model::MobileNetV2, synth::Model::Yolo];
pub const HELD_OUT_GPUS: [Gpu; 1] = [Gpu::B200];

/// One window of a generated trace and what was injected there, if anything.
#[derive(Clone, Debug)]
pub struct LabelledWindow {
    /// Index of the scenario (trace) it comes from.
    pub trace: usize,
    pub features: WindowFeatures,
    pub label: Option<AntiPattern>,
}

/// A scenario's trace, ingested, and its labels.
pub fn ingested(c: &Config) -> Result<(Ingested, Vec<Label>), MlError> {
    let generated = synth::generate(c);
    let ingested =
        ingest_bytes(generated.trace.as_bytes(), IngestOptions::default()).map_err(|error| {
            MlError::Scenario {
                scenario: describe(c),
                error,
            }
        })?;
    Ok((ingested, generated.labels))
}

/// The anti-pattern injected in a window, if any.
pub fn label_of(labels: &[Label], w: &WindowFeatures) -> Option<AntiPattern> {
    labels
        .iter()
        .find(|l| l.step == w.step && l.phase == w.phase.label())
        .and_then(|l| AntiPattern::parse(l.pattern))
}

/// The windows of one generated scenario, labelled from the generator's labels.
pub fn labelled_windows(trace: usize, c: &Config) -> Result<Vec<LabelledWindow>, MlError> {
    let (read, labels) = ingested(c)?;
    let t = &read.trace;
    Ok(of_trace(t, &split(t))
        .into_iter()
        .map(|features| LabelledWindow {
            trace,
            label: label_of(&labels, &features),
            features,
        })
        .collect())
}

/// `model on gpu, training|inference, batch N, seed S`.
pub fn describe(c: &Config) -> String {
    format!(
        "{} on {}, {}, batch {}, seed {}",
        c.model.id(),
        c.gpu.id(),
        if c.training { "training" } else { "inference" },
        c.batch,
        c.seed
    )
}

/// The labelled windows of `count` scenarios of `models` on `gpus`, seeds `seed..seed + count`.
pub fn data_set(
    models: &[synth::Model],
    gpus: &[Gpu],
    count: usize,
    seed: u64,
) -> Result<Vec<LabelledWindow>, MlError> {
    let mut rows = Vec::new();
    for k in 0..count {
        let c = synth::scenario(models, gpus, seed + k as u64);
        rows.extend(labelled_windows(k, &c)?);
    }
    Ok(rows)
}

/// A whole training run: which scenarios, and the forests' sizes.
#[derive(Clone, Copy, Debug)]
pub struct Recipe {
    pub traces: usize,
    pub seed: u64,
    pub params: Params,
}

impl Recipe {
    /// What the committed model (`models/window-forest.json`) is made with.
    pub const COMMITTED: Recipe = Recipe {
        traces: 1000,
        seed: 1,
        params: Params::COMMITTED,
    };

    /// The `ttap-dev train` command that runs this recipe.
    pub fn command(&self) -> String {
        format!(
            "ttap-dev train --traces {} --seed {} --trees {} --max-depth {}",
            self.traces, self.seed, self.params.trees, self.params.max_depth
        )
    }

    fn provenance(&self) -> Provenance {
        Provenance {
            generator: synth::GENERATOR_VERSION,
            traces: self.traces,
            seed: self.seed,
            models: TRAIN_MODELS.iter().map(|m| m.id().to_string()).collect(),
            gpus: TRAIN_GPUS.iter().map(|g| g.id().to_string()).collect(),
            trees: self.params.trees,
            max_depth: self.params.max_depth,
            min_samples_leaf: self.params.min_samples_leaf,
            forest_seed: self.params.seed,
            command: self.command(),
        }
    }
}

/// Generates the recipe's scenarios and fits the model on their windows; the same recipe gives
/// the same model. Returns the windows too (for the training report).
pub fn train(recipe: &Recipe) -> Result<(Model, Vec<LabelledWindow>), MlError> {
    let rows = data_set(&TRAIN_MODELS, &TRAIN_GPUS, recipe.traces, recipe.seed)?;
    let windows: Vec<&[f32]> = rows.iter().map(|r| r.features.values.as_slice()).collect();
    let labels: Vec<Option<AntiPattern>> = rows.iter().map(|r| r.label).collect();
    let model = fit(&windows, &labels, recipe.params, recipe.provenance())?;
    Ok((model, rows))
}
