//! Evaluating the window detector (native only): window AUROC and type accuracy of the forest
//! and of two baselines on the same windows, the rule detectors (their findings as scores) and
//! an unsupervised one (distance to the nearest k-means centroid of standardized features).

use smartcore::cluster::kmeans::{KMeans, KMeansParameters};
use smartcore::linalg::basic::matrix::DenseMatrix;

use super::train::{ingested, label_of, LabelledWindow};
use crate::synth::Config;
use torchtraceap::internals::detect::Finding;
use torchtraceap::internals::features::NAMES;
use torchtraceap::internals::window::Phase;
use torchtraceap::ml::{MlError, Model};
use torchtraceap::model::AntiPattern;
use torchtraceap::AnalyzedTrace;

/// Area under the ROC curve: the probability that a random positive scores above a random
/// negative, ties counting half (the Mann–Whitney statistic). `None` without both classes.
pub fn auroc(scores: &[f32], positive: &[bool]) -> Option<f64> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let positives = positive.iter().filter(|&&p| p).count() as f64;
    let negatives = positive.len() as f64 - positives;
    if positives == 0.0 || negatives == 0.0 {
        return None;
    }
    // Sum of the positives' ranks (1-based), tied scores sharing their mean rank.
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && scores[order[j + 1]] == scores[order[i]] {
            j += 1;
        }
        let mean_rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum += mean_rank * order[i..=j].iter().filter(|&&k| positive[k]).count() as f64;
        i = j + 1;
    }
    Some((rank_sum - positives * (positives + 1.0) / 2.0) / (positives * negatives))
}

/// One held-out window: its label and what each method says.
#[derive(Clone, Debug)]
pub struct Scored {
    pub label: Option<AntiPattern>,
    pub forest: f32,
    pub forest_kind: String,
    pub rules: f32,
    pub rules_kind: Option<&'static str>,
    pub kmeans: f32,
    pub kmeans_kind: Option<AntiPattern>,
}

/// The unsupervised baseline: k-means on standardized features; a window's score is its
/// distance to the nearest centroid, its type the most common anti-pattern among the training
/// windows of that cluster.
pub struct KMeansBaseline {
    mean: Vec<f64>,
    scale: Vec<f64>,
    centroids: Vec<Vec<f64>>,
    kinds: Vec<Option<AntiPattern>>,
}

impl KMeansBaseline {
    /// Fits `k` clusters on the training windows (their labels only name the clusters' types).
    pub fn fit(rows: &[LabelledWindow], k: usize) -> Result<KMeansBaseline, MlError> {
        let n = rows.len().max(1) as f64;
        let column = |j: usize| rows.iter().map(move |r| f64::from(r.features.values[j]));
        let mean: Vec<f64> = (0..NAMES.len())
            .map(|j| column(j).sum::<f64>() / n)
            .collect();
        let scale: Vec<f64> = (0..NAMES.len())
            .map(|j| {
                let var = column(j).map(|v| (v - mean[j]).powi(2)).sum::<f64>() / n;
                if var > 0.0 {
                    var.sqrt()
                } else {
                    1.0
                }
            })
            .collect();
        let mut baseline = KMeansBaseline {
            mean,
            scale,
            centroids: Vec::new(),
            kinds: Vec::new(),
        };
        let x: Vec<Vec<f64>> = rows
            .iter()
            .map(|r| baseline.standardized(&r.features.values))
            .collect();
        let doing = format!("k-means on {} windows", rows.len());
        let matrix = DenseMatrix::from_2d_vec(&x).map_err(|e| MlError::smartcore(&doing, e))?;
        let params = KMeansParameters {
            seed: Some(1),
            ..KMeansParameters::default().with_k(k).with_max_iter(100)
        };
        let fitted: KMeans<f64, u32, DenseMatrix<f64>, Vec<u32>> =
            KMeans::fit(&matrix, params).map_err(|e| MlError::smartcore(&doing, e))?;
        // smartcore keeps the centroids private; its serde form holds them.
        let form = serde_json::to_value(&fitted).map_err(|e| MlError::smartcore(&doing, e))?;
        baseline.centroids = serde_json::from_value(form["centroids"].clone())
            .map_err(|e| MlError::smartcore(&doing, format!("no centroids in its form ({e})")))?;
        let mut counts = vec![[0usize; AntiPattern::ALL.len()]; baseline.centroids.len()];
        for (r, x) in rows.iter().zip(&x) {
            if let Some(k) = r.label {
                let kind = AntiPattern::ALL.iter().position(|p| *p == k).unwrap_or(0);
                counts[baseline.nearest(x).0][kind] += 1;
            }
        }
        baseline.kinds = counts
            .iter()
            .map(|c| {
                let best = (0..c.len()).max_by_key(|&k| c[k])?;
                (c[best] > 0).then_some(AntiPattern::ALL[best])
            })
            .collect();
        Ok(baseline)
    }

    fn standardized(&self, values: &[f32]) -> Vec<f64> {
        values
            .iter()
            .enumerate()
            .map(|(j, &v)| (f64::from(v) - self.mean[j]) / self.scale[j])
            .collect()
    }

    /// The nearest centroid and the distance to it.
    fn nearest(&self, x: &[f64]) -> (usize, f64) {
        self.centroids
            .iter()
            .enumerate()
            .map(|(c, centroid)| {
                let d2: f64 = centroid.iter().zip(x).map(|(a, b)| (a - b).powi(2)).sum();
                (c, d2.sqrt())
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, 0.0))
    }

    /// The anomaly score and the type of one window.
    pub fn score(&self, values: &[f32]) -> (f32, Option<AntiPattern>) {
        let (c, d) = self.nearest(&self.standardized(values));
        (d as f32, self.kinds.get(c).copied().flatten())
    }
}

/// The findings that speak of a window: those citing its step (or no step at all) whose
/// anti-pattern affects its phase (findings of no injectable anti-pattern affect every phase).
fn speaking_of(findings: &[Finding], step: i64, phase: Phase) -> impl Iterator<Item = &Finding> {
    findings.iter().filter(move |f| {
        f.cites(step)
            && AntiPattern::parse(f.id).is_none_or(|p| p.phases().contains(&phase.label()))
    })
}

/// The rules baseline for one window: the highest confidence among the findings that speak of
/// it (0 without any), and the id of the most confident injectable one among them.
pub fn rule_score(findings: &[Finding], step: i64, phase: Phase) -> (f32, Option<&'static str>) {
    let score = speaking_of(findings, step, phase)
        .map(|f| f.confidence)
        .fold(0.0, f32::max);
    let kind = speaking_of(findings, step, phase)
        .filter(|f| AntiPattern::parse(f.id).is_some())
        .max_by(|a, b| a.confidence.total_cmp(&b.confidence))
        .map(|f| f.id);
    (score, kind)
}

/// Every window of one generated scenario, scored by the forest and both baselines.
pub fn score_scenario(
    model: &Model,
    kmeans: &KMeansBaseline,
    c: &Config,
) -> Result<Vec<Scored>, MlError> {
    let (read, labels) = ingested(c)?;
    let analyzed = AnalyzedTrace::new(&read);
    let findings = analyzed.findings();
    Ok(analyzed
        .features()
        .iter()
        .map(|w| {
            let label = label_of(&labels, w);
            let s = model.score(&w.values);
            let (rules, rules_kind) = rule_score(findings, w.step, w.phase);
            let (kmeans, kmeans_kind) = kmeans.score(&w.values);
            Scored {
                label,
                forest: s.probability,
                forest_kind: s.kind.to_string(),
                rules,
                rules_kind,
                kmeans,
                kmeans_kind,
            }
        })
        .collect())
}
