//! The window detector: two random forests over the window features ([`crate::features`]), one
//! giving the probability that a window holds an anti-pattern (the share of its trees voting
//! "anomalous"), one naming which.
//!
//! The forests are trained by smartcore ([`fit`]: natively by `ttap-dev train`, whose recipe is in
//! the development crate, `dev/src/ml/train.rs`; and in the browser's worker on the user's kept
//! labels, [`base_set::retrain`]) and exported into the
//! compact form below, which this module walks: no smartcore, no threads, no clock and no file
//! in the scoring path, so the browser scores windows like the CLI. smartcore's own trees
//! ([`by_smartcore`]) give the same probabilities on every window of the shared traces in 1.7
//! times the walk's time natively and 9 times in the browser (`tests/ml_smartcore.rs`,
//! `web/tests/browser.rs`, release builds), so the walk scores. The trained model is
//! embedded from `models/window-forest.json` ([`Model::embedded`]), which records what made it
//! ([`Provenance`]).

pub mod base_set;
pub mod by_smartcore;
mod error;
pub mod fit;
pub mod labels;

pub use error::MlError;

use std::sync::{LazyLock, OnceLock};

use serde::{Deserialize, Serialize};

use crate::features::NAMES;
use crate::model::Trace;

/// The model file's format name; readers check it and [`VERSION`].
pub const FORMAT: &str = "torchtraceap.window-forest";
pub const VERSION: u32 = 2;

/// Whether the detector applies to the trace: it is trained on GPU steps, and every feature but
/// a few speaks of GPU work, so a trace without any (a CPU-only profile) is outside its domain.
pub fn applies_to(t: &Trace) -> bool {
    t.tracks.iter().any(|tr| tr.gpu && !tr.events.is_empty())
}

/// `feature` of a leaf node.
pub(crate) const LEAF: u8 = u8::MAX;

/// One decision tree in preorder, as columns: node `i`'s left child is node `i + 1`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    /// The feature a node tests (index into [`NAMES`]), or [`LEAF`].
    pub feature: Vec<u8>,
    /// The threshold (left when the value is at most this), or at a leaf the class index.
    pub value: Vec<f32>,
    /// The right child's index; 0 at a leaf.
    pub right: Vec<u32>,
}

impl Tree {
    /// The class the tree votes for.
    fn class(&self, x: &[f32]) -> usize {
        let mut i = 0;
        loop {
            let f = self.feature[i];
            if f == LEAF {
                return self.value[i] as usize;
            }
            i = if x[usize::from(f)] <= self.value[i] {
                i + 1
            } else {
                self.right[i] as usize
            };
        }
    }

    /// Whether walking the tree always ends at a leaf naming one of `classes` classes.
    fn is_well_formed(&self, classes: usize) -> bool {
        let n = self.feature.len();
        n > 0
            && self.value.len() == n
            && self.right.len() == n
            && (0..n).all(|i| match self.feature[i] {
                LEAF => (self.value[i] as usize) < classes && self.value[i] >= 0.0,
                f => {
                    usize::from(f) < NAMES.len()
                        && i + 1 < n
                        && (self.right[i] as usize) > i + 1
                        && (self.right[i] as usize) < n
                }
            })
    }
}

/// Trees voting among named classes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Forest {
    pub classes: Vec<String>,
    pub trees: Vec<Tree>,
}

impl Forest {
    /// The share of the trees voting for each class.
    pub fn shares(&self, x: &[f32]) -> Vec<f32> {
        let mut votes = vec![0u32; self.classes.len()];
        for t in &self.trees {
            votes[t.class(x)] += 1;
        }
        let n = self.trees.len().max(1) as f32;
        votes.into_iter().map(|v| v as f32 / n).collect()
    }
}

/// The trace generator's version (the development crate's, `dev/src/synth/`): raised whenever the same
/// configuration and seed would give another trace, so that a model trained on generated traces
/// ([`Provenance`]) and the base set ([`base_set`]) say which generator made them, and a stale one
/// is noticed. Here, below the generator, because the browser reads base sets without it.
pub const GENERATOR_VERSION: u32 = 2;

/// What made a model: enough to make it again, byte for byte, with `ttap-dev train`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// [`GENERATOR_VERSION`] of the generator that wrote the training scenarios.
    pub generator: u32,
    /// Scenarios `synth::scenario(models, gpus, seed..seed + traces)`.
    pub traces: usize,
    pub seed: u64,
    pub models: Vec<String>,
    pub gpus: Vec<String>,
    /// The forests' sizes and smartcore's seed.
    pub trees: u16,
    pub max_depth: u16,
    pub min_samples_leaf: usize,
    pub forest_seed: u64,
    /// The `ttap-dev train` command that rebuilds the model.
    pub command: String,
}

/// The window detector: whether a window holds an anti-pattern, and which.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub format: String,
    pub version: u32,
    pub provenance: Provenance,
    /// The feature names the forests were trained on ([`NAMES`]).
    pub features: Vec<String>,
    /// Classes `normal`, `anomalous`.
    pub anomaly: Forest,
    /// Classes: the anti-pattern ids (detector ids), trained on anomalous windows only.
    pub kind: Forest,
    /// A window whose probability is above this is flagged (more than half the trees, at 0.5).
    pub threshold: f32,
}

/// The features of which at least one must be above 0 in a window for it to hold each
/// anti-pattern: a window without DataLoader time holds no DataLoader bottleneck, one without
/// kernels no launch-bound work. A window with the evidence of none (no GPU work, no runtime
/// call: an empty slice) is not anomalous whatever the trees say.
const EVIDENCE: [(&str, &[&str]); 6] = [
    ("dataloader-bottleneck", &["dataloader_time"]),
    ("host-device-sync", &["sync_time", "items_per_launch"]),
    ("pageable-memcpy", &["pageable_copy_time"]),
    ("fp32-without-tensor-cores", &["simt_fp32_kernel_share"]),
    (
        "allocator-churn",
        &["allocations_per_launch", "allocation_call_time"],
    ),
    ("launch-bound-small-kernels", &["short_kernel_share"]),
];

/// [`EVIDENCE`] with its features as indices into [`NAMES`], looked up once.
static EVIDENCE_INDICES: LazyLock<Vec<(&str, Vec<usize>)>> = LazyLock::new(|| {
    EVIDENCE
        .iter()
        .map(|(kind, features)| {
            let indices = features
                .iter()
                .map(|f| {
                    NAMES
                        .iter()
                        .position(|n| n == f)
                        .unwrap_or_else(|| panic!("evidence feature {f} is not in NAMES"))
                })
                .collect();
            (*kind, indices)
        })
        .collect()
});

/// Whether the window's features show the evidence `kind` needs (kinds without an entry in
/// [`EVIDENCE`] need none).
fn has_evidence(kind: &str, x: &[f32]) -> bool {
    EVIDENCE_INDICES
        .iter()
        .find(|(k, _)| *k == kind)
        .is_none_or(|(_, features)| features.iter().any(|&j| x[j] > 0.0))
}

/// Whether the window shows the evidence of at least one anti-pattern: the windows the model
/// scores.
pub fn shows_evidence(x: &[f32]) -> bool {
    EVIDENCE.iter().any(|(kind, _)| has_evidence(kind, x))
}

/// What the model says about one window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowScore<'m> {
    /// The share of the anomaly forest's trees voting "anomalous"; 0 where the window shows the
    /// evidence of no anti-pattern ([`EVIDENCE`]).
    pub probability: f32,
    /// The most likely anti-pattern (a detector id) among those whose evidence the window
    /// shows, whatever the probability.
    pub kind: &'m str,
    /// The share of the type forest's trees voting for `kind`.
    pub(crate) kind_share: f32,
}

const EMBEDDED: &str = include_str!("../../models/window-forest.json");

impl Model {
    /// The model trained by `ttap-dev train` and committed with the code.
    pub fn embedded() -> &'static Model {
        static MODEL: OnceLock<Model> = OnceLock::new();
        MODEL.get_or_init(|| {
            Model::from_json(EMBEDDED).unwrap_or_else(|e| {
                panic!("models/window-forest.json: {e}; rebuild it with `ttap-dev train`")
            })
        })
    }

    /// Reads and checks a model file's text.
    pub fn from_json(text: &str) -> Result<Model, MlError> {
        let m: Model = serde_json::from_str(text).map_err(|e| MlError::NotAModel(e.to_string()))?;
        if m.format != FORMAT || m.version != VERSION {
            return Err(MlError::ModelVersion {
                format: m.format,
                version: m.version,
            });
        }
        if m.features != NAMES {
            return Err(MlError::ModelFeatures(m.features.len()));
        }
        for (what, f, classes) in [("anomaly", &m.anomaly, 2), ("kind", &m.kind, 1)] {
            if f.trees.is_empty() || f.classes.len() < classes {
                return Err(MlError::EmptyForest(what));
            }
            if let Some(k) = f
                .trees
                .iter()
                .position(|t| !t.is_well_formed(f.classes.len()))
            {
                return Err(MlError::MalformedTree {
                    forest: what,
                    tree: k,
                });
            }
        }
        Ok(m)
    }

    /// The model file's text ([`Model::from_json`] reads it).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a model serializes")
    }

    /// Scores one feature vector (in [`NAMES`] order).
    pub fn score(&self, x: &[f32]) -> WindowScore<'_> {
        debug_assert_eq!(x.len(), NAMES.len());
        let kinds = self.kind.shares(x);
        let likelier = |&a: &usize, &b: &usize| kinds[a].total_cmp(&kinds[b]).then(b.cmp(&a));
        let evidenced = (0..kinds.len())
            .filter(|&k| has_evidence(&self.kind.classes[k], x))
            .max_by(likelier);
        let best = evidenced
            .or_else(|| (0..kinds.len()).max_by(likelier))
            .unwrap_or(0);
        WindowScore {
            probability: if evidenced.is_some() {
                self.anomaly.shares(x)[1]
            } else {
                0.0
            },
            kind: &self.kind.classes[best],
            kind_share: kinds[best],
        }
    }

    /// Whether a window of this probability is flagged.
    pub fn flags(&self, probability: f32) -> bool {
        probability > self.threshold
    }
}
