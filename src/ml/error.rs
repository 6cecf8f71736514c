//! Why the window detector could not be read, fitted or evaluated: each case says what was found
//! and what to do.

use crate::detect::scoring::ScoringError;
use crate::features::NAMES;
use crate::ingest::IngestError;

use super::{FORMAT, VERSION};

#[derive(Debug, thiserror::Error)]
pub enum MlError {
    #[error("not a window-forest model ({0}): write one with `ttap-dev train`")]
    NotAModel(String),
    #[error("model format {format} version {version}, this build reads {FORMAT} version {VERSION}: retrain it with `ttap-dev train`")]
    ModelVersion { format: String, version: u32 },
    #[error("the model was trained on {0} features, this build has the {n} of features::NAMES: retrain it with `ttap-dev train`", n = NAMES.len())]
    ModelFeatures(usize),
    #[error("the model's {0} forest has no trees or no classes")]
    EmptyForest(&'static str),
    #[error("the model's {forest} forest's tree {tree} is malformed")]
    MalformedTree { forest: &'static str, tree: usize },
    #[error(
        "{windows} windows hold {distinct} of the classes {classes:?}: generate more scenarios"
    )]
    TooFewClasses {
        windows: usize,
        distinct: usize,
        classes: Vec<String>,
    },
    /// smartcore failed, or wrote a form this version does not know.
    #[error("smartcore, {doing}: {message}")]
    Smartcore { doing: String, message: String },
    #[error("a kept window has {0} features, the model {n}", n = NAMES.len())]
    KeptWindow(usize),
    #[error("{file}: not a labels file ({message}); expected a JSON array of {{\"step\", \"phase\", \"pattern\"}} as `ttap-dev synth --labels` or the web app's Export labels write")]
    NotLabels { file: String, message: String },
    #[error("{file}: label {index} (step {step} {phase}) has the pattern '{pattern}'; expected one of {expected}")]
    UnknownPattern {
        file: String,
        index: usize,
        step: i64,
        phase: String,
        pattern: String,
        expected: String,
    },
    #[error("none of the {total} labels in {file} is for {trace} (fingerprint {fingerprint}): each label names its trace and fingerprint; pass the trace they were made on")]
    NoLabelsForTrace {
        total: usize,
        file: String,
        trace: String,
        fingerprint: String,
    },
    #[error("the generated scenario {scenario}: {error}")]
    Scenario {
        scenario: String,
        error: IngestError,
    },
    #[error(transparent)]
    RealTrace(#[from] ScoringError),
}

impl MlError {
    /// A smartcore failure while `doing` something.
    pub fn smartcore(doing: impl Into<String>, message: impl ToString) -> MlError {
        MlError::Smartcore {
            doing: doing.into(),
            message: message.to_string(),
        }
    }
}
