//! Fitting the window detector's two forests with smartcore and exporting them into
//! [`Model`]'s compact trees: natively for `ttap-dev train`, and in the browser's worker when the user
//! retrains on their kept labels.
//!
//! smartcore's `RandomForestClassifier` votes but gives no class probabilities, and keeps its
//! trees private; its serde form does hold them, so the export reads the trees from there, and
//! the compact trees then give the share of trees voting for each class (what [`Model::score`]
//! reports), which smartcore's `predict` cannot.

use serde_json::Value;
use smartcore::ensemble::random_forest_classifier::{
    RandomForestClassifier, RandomForestClassifierParameters,
};
use smartcore::linalg::basic::matrix::DenseMatrix;

use super::{Forest, MlError, Model, Provenance, Tree, FORMAT, LEAF, VERSION};
use crate::features::NAMES;
use crate::model::AntiPattern;

/// The forests' sizes.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub trees: u16,
    pub max_depth: u16,
    pub min_samples_leaf: usize,
    pub seed: u64,
}

impl Params {
    /// What the committed model is trained with.
    pub const COMMITTED: Params = Params {
        trees: 60,
        max_depth: 12,
        min_samples_leaf: 2,
        seed: 1,
    };
}

/// Fits both forests on windows' feature vectors (in [`NAMES`] order) and their labels (the
/// anti-pattern a window holds, or `None`).
pub fn fit(
    windows: &[&[f32]],
    labels: &[Option<AntiPattern>],
    p: Params,
    provenance: Provenance,
) -> Result<Model, MlError> {
    let x: Vec<Vec<f64>> = windows
        .iter()
        .map(|w| w.iter().map(|&v| f64::from(v)).collect())
        .collect();
    let anomalous: Vec<u32> = labels.iter().map(|l| u32::from(l.is_some())).collect();
    let anomaly = forest(&x, &anomalous, vec!["normal".into(), "anomalous".into()], p)?;
    let kinds: Vec<AntiPattern> = AntiPattern::ALL
        .into_iter()
        .filter(|k| labels.contains(&Some(*k)))
        .collect();
    let (kx, ky): (Vec<Vec<f64>>, Vec<u32>) = labels
        .iter()
        .zip(&x)
        .filter_map(|(l, x)| {
            let k = kinds.iter().position(|k| Some(*k) == *l)?;
            Some((x.clone(), k as u32))
        })
        .unzip();
    let kind = forest(
        &kx,
        &ky,
        kinds.iter().map(|k| k.id().to_string()).collect(),
        p,
    )?;
    Ok(Model {
        format: FORMAT.into(),
        version: VERSION,
        provenance,
        features: NAMES.iter().map(|n| n.to_string()).collect(),
        anomaly,
        kind,
        threshold: 0.5,
    })
}

/// A smartcore random forest on `x` (rows) and classes `y` (indices into `classes`), exported.
fn forest(x: &[Vec<f64>], y: &[u32], classes: Vec<String>, p: Params) -> Result<Forest, MlError> {
    let distinct = (0..classes.len() as u32).filter(|c| y.contains(c)).count();
    if distinct < 2 {
        return Err(MlError::TooFewClasses {
            windows: y.len(),
            distinct,
            classes,
        });
    }
    let doing = format!("fitting the forest of {classes:?}");
    let matrix =
        DenseMatrix::from_2d_vec(&x.to_vec()).map_err(|e| MlError::smartcore(&doing, e))?;
    let rf = smartcore_forest(&matrix, y, p).map_err(|e| MlError::smartcore(&doing, e))?;
    Ok(Forest {
        classes,
        trees: export(&rf)?,
    })
}

type SmartcoreForest = RandomForestClassifier<f64, u32, DenseMatrix<f64>, Vec<u32>>;

fn smartcore_forest(
    x: &DenseMatrix<f64>,
    y: &[u32],
    p: Params,
) -> Result<SmartcoreForest, smartcore::error::Failed> {
    let params = RandomForestClassifierParameters::default()
        .with_n_trees(p.trees)
        .with_max_depth(p.max_depth)
        .with_min_samples_leaf(p.min_samples_leaf)
        .with_seed(p.seed);
    RandomForestClassifier::fit(x, &y.to_vec(), params)
}

/// A fitted forest's serde form that this version cannot read.
fn unknown_form(message: impl ToString) -> MlError {
    MlError::smartcore("exporting a fitted forest from its serde form", message)
}

/// The forest's trees, read from its serde form.
fn export(rf: &SmartcoreForest) -> Result<Vec<Tree>, MlError> {
    let form = serde_json::to_value(rf).map_err(unknown_form)?;
    form["trees"]
        .as_array()
        .ok_or_else(|| unknown_form("no trees"))?
        .iter()
        .map(export_tree)
        .collect()
}

/// One smartcore tree (its serde form) in preorder columns.
fn export_tree(tree: &Value) -> Result<Tree, MlError> {
    let nodes = tree["nodes"]
        .as_array()
        .ok_or_else(|| unknown_form("a tree without nodes"))?;
    let classes: Vec<u64> = tree["classes"]
        .as_array()
        .ok_or_else(|| unknown_form("a tree without classes"))?
        .iter()
        .map(|c| {
            c.as_u64()
                .ok_or_else(|| unknown_form("a class that is not an index"))
        })
        .collect::<Result<_, _>>()?;
    let mut out = Tree {
        feature: Vec::new(),
        value: Vec::new(),
        right: Vec::new(),
    };
    visit(nodes, &classes, 0, &mut out)?;
    Ok(out)
}

fn visit(nodes: &[Value], classes: &[u64], i: usize, out: &mut Tree) -> Result<(), MlError> {
    let node = nodes
        .get(i)
        .ok_or_else(|| unknown_form(format!("a tree's child {i} is missing")))?;
    let child = |k: &str| node[k].as_u64().map(|c| c as usize);
    let here = out.feature.len();
    match (child("true_child"), child("false_child")) {
        (Some(left), Some(right)) => {
            let feature = node["split_feature"]
                .as_u64()
                .filter(|&f| (f as usize) < NAMES.len())
                .ok_or_else(|| unknown_form("a split on no known feature"))?;
            let threshold = node["split_value"]
                .as_f64()
                .ok_or_else(|| unknown_form("a split without value"))?;
            out.feature.push(feature as u8);
            out.value.push(at_most(threshold));
            out.right.push(0);
            visit(nodes, classes, left, out)?;
            out.right[here] = out.feature.len() as u32;
            visit(nodes, classes, right, out)
        }
        _ => {
            let output = node["output"]
                .as_u64()
                .ok_or_else(|| unknown_form("a leaf without output"))?
                as usize;
            let class = classes
                .get(output)
                .ok_or_else(|| unknown_form("a leaf naming no class of its tree"))?;
            out.feature.push(LEAF);
            out.value.push(*class as f32);
            out.right.push(0);
            Ok(())
        }
    }
}

/// The largest `f32` not above `t`: for any `f32` value `v`, `v <= t` exactly when
/// `v <= at_most(t)`, so the exported tree splits as smartcore's did.
fn at_most(t: f64) -> f32 {
    let f = t as f32;
    if f64::from(f) > t {
        f.next_down()
    } else {
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exported trees vote as smartcore's forest predicts on every row, though every value
    /// is one of four adjacent `f32`s, so that each threshold (a midpoint) rounds to one of them
    /// unless rounded down. One tree, so that no vote hides another.
    #[test]
    fn the_exported_trees_vote_as_smartcore_predicts() {
        let mut state = 7u64;
        let mut step = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 62) as usize
        };
        let adjacent = |k: usize| (0..k).fold(0.1f32, |v, _| v.next_up());
        let steps: Vec<Vec<usize>> = (0..300)
            .map(|_| (0..NAMES.len()).map(|_| step()).collect())
            .collect();
        let y: Vec<u32> = steps
            .iter()
            .map(|k| u32::from(k[3] + k[7] >= 4 || k[11] == 3))
            .collect();
        let rows: Vec<Vec<f32>> = steps
            .iter()
            .map(|k| k.iter().map(|&k| adjacent(k)).collect())
            .collect();
        let x: Vec<Vec<f64>> = rows
            .iter()
            .map(|r| r.iter().map(|&v| f64::from(v)).collect())
            .collect();
        let matrix = DenseMatrix::from_2d_vec(&x).unwrap();
        let p = Params {
            trees: 1,
            max_depth: 16,
            min_samples_leaf: 1,
            seed: 3,
        };
        let rf = smartcore_forest(&matrix, &y, p).unwrap();
        let predicted = rf.predict(&matrix).unwrap();
        let forest = Forest {
            classes: vec!["normal".into(), "anomalous".into()],
            trees: export(&rf).unwrap(),
        };
        for (row, smartcore) in rows.iter().zip(predicted) {
            let ours = u32::from(forest.shares(row)[1] > 0.5);
            assert_eq!(ours, smartcore, "{row:?}");
        }
    }

    #[test]
    fn thresholds_round_down_to_f32() {
        let t = 0.1f64;
        let f = at_most(t);
        assert!(f64::from(f) <= t && f64::from(f.next_up()) > t);
        assert_eq!(at_most(0.5), 0.5);
    }
}
