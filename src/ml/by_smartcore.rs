//! The model's compact trees rebuilt as smartcore's own decision trees, which then vote as
//! smartcore predicts: the reference the compact walk ([`Forest::shares`]) is checked against
//! (`tests/ml_smartcore.rs`, on every window of the shared traces) and measured against.
//!
//! smartcore's `RandomForestClassifier` keeps its trees private and predicts only the majority
//! class; its `DecisionTreeClassifier` predicts each tree's class, so the share of trees voting
//! for a class, what [`Model::score`](super::Model::score) reports, is counted over them. Each
//! tree is built through smartcore's serde form (the one [`super::fit`] reads its trees from):
//! node `i`'s children are `i + 1` and `right[i]`, its threshold the compact `f32`, which splits
//! an `f32` feature as the compact walk does.

use serde_json::{json, Value};
use smartcore::linalg::basic::arrays::Array;
use smartcore::linalg::basic::matrix::DenseMatrix;
use smartcore::tree::decision_tree_classifier::DecisionTreeClassifier;

use super::{Forest, MlError, Tree, LEAF};
use crate::features::NAMES;

type SmartcoreTree = DecisionTreeClassifier<f64, u32, DenseMatrix<f64>, Vec<u32>>;

/// A forest of smartcore trees voting among `classes` classes.
pub struct SmartcoreForest {
    classes: usize,
    trees: Vec<SmartcoreTree>,
}

impl SmartcoreForest {
    /// The forest's trees as smartcore's.
    pub fn of(forest: &Forest) -> Result<SmartcoreForest, MlError> {
        let classes = forest.classes.len();
        let trees = forest
            .trees
            .iter()
            .enumerate()
            .map(|(k, t)| {
                tree(t, classes).map_err(|e| MlError::smartcore(format!("reading tree {k}"), e))
            })
            .collect::<Result<_, _>>()?;
        Ok(SmartcoreForest { classes, trees })
    }

    /// For each row of `x` (a window's features in [`NAMES`] order), the share of the trees
    /// voting for each class.
    pub fn shares(&self, x: &DenseMatrix<f64>) -> Result<Vec<Vec<f32>>, MlError> {
        let mut votes = vec![vec![0u32; self.classes]; x.shape().0];
        for t in &self.trees {
            for (row, class) in t
                .predict(x)
                .map_err(|e| MlError::smartcore("predicting", e))?
                .iter()
                .enumerate()
            {
                votes[row][*class as usize] += 1;
            }
        }
        let n = self.trees.len().max(1) as f32;
        Ok(votes
            .into_iter()
            .map(|v| v.into_iter().map(|c| c as f32 / n).collect())
            .collect())
    }
}

/// Windows' features as smartcore's matrix.
pub fn matrix(windows: &[&[f32]]) -> Result<DenseMatrix<f64>, MlError> {
    let rows: Vec<Vec<f64>> = windows
        .iter()
        .map(|w| w.iter().map(|&v| f64::from(v)).collect())
        .collect();
    DenseMatrix::from_2d_vec(&rows)
        .map_err(|e| MlError::smartcore("building the windows' matrix", e))
}

/// One compact tree in smartcore's serde form, read back as smartcore's tree.
fn tree(t: &Tree, classes: usize) -> Result<SmartcoreTree, serde_json::Error> {
    let nodes: Vec<Value> = (0..t.feature.len())
        .map(|i| {
            let leaf = t.feature[i] == LEAF;
            json!({
                "output": if leaf { t.value[i] as usize } else { 0 },
                "n_node_samples": 0,
                "split_feature": if leaf { 0 } else { t.feature[i] },
                "split_value": (!leaf).then(|| f64::from(t.value[i])),
                "split_score": null,
                "true_child": (!leaf).then_some(i + 1),
                "false_child": (!leaf).then(|| t.right[i]),
                "impurity": null,
            })
        })
        .collect();
    serde_json::from_value(json!({
        "nodes": nodes,
        "parameters": null,
        "num_classes": classes,
        "classes": (0..classes as u32).collect::<Vec<_>>(),
        "depth": 0,
        "num_features": NAMES.len(),
        "_phantom_tx": null,
        "_phantom_x": null,
        "_phantom_y": null,
    }))
}
