//! The window detector judged on the hand-labelled **real** traces (`models/real-labels.json`,
//! decided as `docs/LABELS.md` says), next to the rules and the k-means baseline on the same
//! traces (native only).
//!
//! The labels are per trace and say what the *median steady step* holds, so every method is
//! reduced to the same question: a trace's score is the median, over its steady steps, of the
//! step's most anomalous window. A trace is positive when a label finds one of the six
//! anti-patterns the model knows, negative when the labels find all six absent, and left out
//! otherwise (some unjudged, none present).

use std::path::Path;

use super::eval::{auroc, KMeansBaseline};
use torchtraceap::internals::detect::scoring::{read_labelled, LabelSet, RealLabels};
use torchtraceap::internals::features::{WindowFeatures, NAMES};
use torchtraceap::ml::{shows_evidence, MlError, Model};
use torchtraceap::model::AntiPattern;
use torchtraceap::AnalyzedTrace;

/// One labelled real trace, scored by the three methods.
#[derive(Clone, Debug)]
pub struct RealScored {
    /// Path below the shared traces folder.
    pub trace: String,
    pub healthy_control: bool,
    /// The six types the labels find present, and absent.
    pub present: Vec<AntiPattern>,
    pub absent: Vec<AntiPattern>,
    pub steady_windows: usize,
    /// Steady windows above the model's threshold.
    pub flagged_windows: usize,
    /// The median steady step's most anomalous window's probability.
    pub forest: f32,
    /// The type the model names most often among its flagged steady windows.
    pub forest_kind: Option<String>,
    /// The highest confidence among the rules' findings of the six types (0 without any).
    pub rules: f32,
    pub rules_kinds: Vec<&'static str>,
    /// The median steady step's largest distance to a k-means centroid.
    pub kmeans: f32,
    /// The cluster type of the window at that distance.
    pub kmeans_kind: Option<AntiPattern>,
    /// The steady windows' feature vectors.
    pub steady: Vec<Vec<f32>>,
}

impl RealScored {
    /// Positive (one of the six present), negative (all six absent), or `None` (left out).
    pub fn anomalous(&self) -> Option<bool> {
        if !self.present.is_empty() {
            Some(true)
        } else if self.absent.len() == AntiPattern::ALL.len() {
            Some(false)
        } else {
            None
        }
    }
}

/// The median over steps of each step's largest score; `scores` pairs a step index with a
/// window's score.
fn median_step_max(scores: impl Iterator<Item = (usize, f32)>) -> f32 {
    let mut per_step: Vec<(usize, f32)> = Vec::new();
    for (step, s) in scores {
        match per_step.iter_mut().find(|(k, _)| *k == step) {
            Some((_, best)) => *best = best.max(s),
            None => per_step.push((step, s)),
        }
    }
    let mut maxima: Vec<f32> = per_step.into_iter().map(|(_, s)| s).collect();
    maxima.sort_by(f32::total_cmp);
    maxima.get(maxima.len() / 2).copied().unwrap_or(0.0)
}

/// Scores every trace under `dir` the figures-rubric labels judge (k-means too where a baseline is given; its scores
/// are 0 otherwise).
pub fn score_labelled(
    model: &Model,
    kmeans: Option<&KMeansBaseline>,
    labels: &RealLabels,
    dir: &Path,
) -> Result<Vec<RealScored>, MlError> {
    let mut out = Vec::new();
    for l in labels
        .traces
        .iter()
        .filter(|l| l.judged_by(LabelSet::Rubric))
    {
        let ingested = read_labelled(dir, &l.trace)?;
        let analyzed = AnalyzedTrace::new(&ingested);
        let a = analyzed.analysis();
        let steady_steps = a.steps.steady();
        let steady: Vec<(usize, WindowFeatures)> = analyzed
            .features()
            .into_iter()
            .zip(a.steps.windows())
            .filter(|(_, w)| steady_steps.contains(&w.step))
            .map(|(f, w)| (w.step, f))
            .collect();
        let scores: Vec<_> = steady.iter().map(|(_, f)| model.score(&f.values)).collect();
        let distances: Vec<_> = steady
            .iter()
            .map(|(_, f)| kmeans.map_or((0.0, None), |k| k.score(&f.values)))
            .collect();
        let flagged: Vec<&str> = scores
            .iter()
            .filter(|s| model.flags(s.probability))
            .map(|s| s.kind)
            .collect();
        let forest_kind = most_common(&flagged).map(str::to_string);
        let kmeans_score = median_step_max(steady.iter().zip(&distances).map(|(w, d)| (w.0, d.0)));
        let kmeans_kind = distances
            .iter()
            .find(|d| d.0 == kmeans_score)
            .and_then(|d| d.1);
        let findings = analyzed.findings();
        let six: Vec<_> = findings
            .iter()
            .filter(|f| AntiPattern::parse(f.id).is_some())
            .collect();
        let parse = |ids: &mut dyn Iterator<Item = &String>| -> Vec<AntiPattern> {
            ids.filter_map(|id| AntiPattern::parse(id)).collect()
        };
        out.push(RealScored {
            trace: l.trace.clone(),
            healthy_control: l.healthy_control,
            present: parse(&mut l.present.keys()),
            absent: parse(&mut l.absent.keys()),
            steady_windows: steady.len(),
            flagged_windows: flagged.len(),
            forest: median_step_max(
                steady
                    .iter()
                    .zip(&scores)
                    .map(|(w, s)| (w.0, s.probability)),
            ),
            forest_kind,
            rules: six.iter().map(|f| f.confidence).fold(0.0, f32::max),
            rules_kinds: six.iter().map(|f| f.id).collect(),
            kmeans: kmeans_score,
            kmeans_kind,
            steady: steady.into_iter().map(|(_, f)| f.values).collect(),
        });
    }
    Ok(out)
}

fn most_common<'a>(items: &[&'a str]) -> Option<&'a str> {
    let mut best: Option<(&str, usize)> = None;
    for &i in items {
        let n = items.iter().filter(|&&j| j == i).count();
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((i, n));
        }
    }
    best.map(|(i, _)| i)
}

/// One method's figures on the judged traces.
#[derive(Clone, Debug, PartialEq)]
pub struct MethodFigures {
    pub auroc: Option<f64>,
    /// Of the positive traces, the share whose named type is one the labels find present.
    pub type_accuracy: f64,
}

/// The figures the evaluation report shows.
#[derive(Clone, Debug, PartialEq)]
pub struct RealFigures {
    pub positives: usize,
    pub negatives: usize,
    pub left_out: usize,
    pub forest: MethodFigures,
    pub rules: MethodFigures,
    pub kmeans: MethodFigures,
    /// Traces the model flags (score above its threshold): positives, negatives.
    pub flagged_positive: usize,
    pub flagged_negative: usize,
    /// Steady windows of the healthy controls, and how many the model flags.
    pub healthy_windows: usize,
    pub healthy_flagged: usize,
    /// Per type, over the judged (trace, type) pairs: both the model and the rules find it,
    /// either does.
    pub both: usize,
    pub either: usize,
}

impl RealFigures {
    pub fn precision(&self) -> Option<f64> {
        let flagged = self.flagged_positive + self.flagged_negative;
        (flagged > 0).then(|| self.flagged_positive as f64 / flagged as f64)
    }

    pub fn recall(&self) -> f64 {
        self.flagged_positive as f64 / self.positives.max(1) as f64
    }
}

/// The figures of `rows` for a model flagging above `threshold`.
pub fn figures(rows: &[RealScored], threshold: f32) -> RealFigures {
    let judged: Vec<(&RealScored, bool)> = rows
        .iter()
        .filter_map(|r| r.anomalous().map(|a| (r, a)))
        .collect();
    let positive: Vec<bool> = judged.iter().map(|j| j.1).collect();
    let positives: Vec<&RealScored> = judged.iter().filter(|j| j.1).map(|j| j.0).collect();
    let accuracy = |right: &dyn Fn(&RealScored) -> bool| {
        positives.iter().filter(|r| right(r)).count() as f64 / positives.len().max(1) as f64
    };
    let method =
        |score: &dyn Fn(&RealScored) -> f32, right: &dyn Fn(&RealScored) -> bool| MethodFigures {
            auroc: auroc(
                &judged.iter().map(|j| score(j.0)).collect::<Vec<_>>(),
                &positive,
            ),
            type_accuracy: accuracy(right),
        };
    let present = |r: &RealScored, id: &str| r.present.iter().any(|p| p.id() == id);
    let flagged = |r: &RealScored| r.forest > threshold;
    let (mut both, mut either) = (0, 0);
    for (r, _) in &judged {
        for k in AntiPattern::ALL {
            let judged_here = r.present.contains(&k) || r.absent.contains(&k);
            let model = r.forest_kind.as_deref() == Some(k.id()) && flagged(r);
            let rules = r.rules_kinds.contains(&k.id());
            if judged_here && (model || rules) {
                either += 1;
                both += usize::from(model && rules);
            }
        }
    }
    let controls = rows.iter().filter(|r| r.healthy_control);
    RealFigures {
        positives: positives.len(),
        negatives: judged.len() - positives.len(),
        left_out: rows.len() - judged.len(),
        forest: method(&|r| r.forest, &|r| {
            flagged(r) && r.forest_kind.as_deref().is_some_and(|k| present(r, k))
        }),
        rules: method(&|r| r.rules, &|r| {
            r.rules_kinds.iter().any(|k| present(r, k))
        }),
        kmeans: method(&|r| r.kmeans, &|r| {
            r.kmeans_kind.is_some_and(|k| r.present.contains(&k))
        }),
        flagged_positive: judged.iter().filter(|j| j.1 && flagged(j.0)).count(),
        flagged_negative: judged.iter().filter(|j| !j.1 && flagged(j.0)).count(),
        healthy_windows: controls.clone().map(|r| r.steady_windows).sum(),
        healthy_flagged: controls.map(|r| r.flagged_windows).sum(),
        both,
        either,
    }
}

/// How far one feature's values on generated healthy windows lie from its values on real
/// healthy ones.
#[derive(Clone, Debug, PartialEq)]
pub struct FeatureGap {
    pub feature: &'static str,
    /// The two-sample Kolmogorov–Smirnov statistic: the largest gap between the two empirical
    /// distribution functions (0: the same distribution, 1: no overlap).
    pub ks: f64,
    pub generated_median: f32,
    pub real_median: f32,
}

/// The two-sample Kolmogorov–Smirnov statistic of weighted samples `(value, weight)` (sorted in
/// place): the largest gap between their weighted empirical distribution functions.
pub fn ks_statistic(a: &mut [(f32, f64)], b: &mut [(f32, f64)]) -> f64 {
    let total = |s: &[(f32, f64)]| s.iter().map(|x| x.1).sum::<f64>();
    let (ta, tb) = (total(a), total(b));
    if ta <= 0.0 || tb <= 0.0 {
        return 0.0;
    }
    a.sort_by(|x, y| x.0.total_cmp(&y.0));
    b.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut i, mut j, mut fa, mut fb, mut gap) = (0, 0, 0.0, 0.0, 0.0f64);
    while i < a.len() && j < b.len() {
        let v = a[i].0.min(b[j].0);
        while i < a.len() && a[i].0 <= v {
            fa += a[i].1;
            i += 1;
        }
        while j < b.len() && b[j].0 <= v {
            fb += b[j].1;
            j += 1;
        }
        gap = gap.max((fa / ta - fb / tb).abs());
    }
    gap
}

/// The weighted median of `(value, weight)` samples sorted by value.
fn weighted_median(sorted: &[(f32, f64)]) -> f32 {
    let half = sorted.iter().map(|x| x.1).sum::<f64>() / 2.0;
    let mut seen = 0.0;
    for &(v, w) in sorted {
        seen += w;
        if seen >= half {
            return v;
        }
    }
    0.0
}

/// Per feature, the gap between generated healthy windows and the steady windows of the real
/// traces whose labels find none of the six anti-patterns, both only where the model scores
/// them ([`shows_evidence`]: an empty slice says nothing of the generator); largest first. Each
/// real trace weighs the same, however many windows it has (one benchmark of 59 slices would
/// otherwise speak for all).
pub fn feature_gaps(generated: &[&[f32]], rows: &[RealScored]) -> Vec<FeatureGap> {
    let generated: Vec<(&[f32], f64)> = generated
        .iter()
        .filter(|x| shows_evidence(x))
        .map(|x| (*x, 1.0))
        .collect();
    let mut real: Vec<(&[f32], f64)> = Vec::new();
    for r in rows.iter().filter(|r| r.anomalous() == Some(false)) {
        let scored: Vec<&[f32]> = r
            .steady
            .iter()
            .map(Vec::as_slice)
            .filter(|x| shows_evidence(x))
            .collect();
        let weight = 1.0 / scored.len().max(1) as f64;
        real.extend(scored.into_iter().map(|x| (x, weight)));
    }
    let column = |rows: &[(&[f32], f64)], j: usize| -> Vec<(f32, f64)> {
        rows.iter().map(|(x, w)| (x[j], *w)).collect()
    };
    let mut gaps: Vec<FeatureGap> = NAMES
        .iter()
        .enumerate()
        .map(|(j, &feature)| {
            let (mut g, mut r) = (column(&generated, j), column(&real, j));
            let ks = ks_statistic(&mut g, &mut r);
            FeatureGap {
                feature,
                ks,
                generated_median: weighted_median(&g),
                real_median: weighted_median(&r),
            }
        })
        .collect();
    gaps.sort_by(|a, b| b.ks.total_cmp(&a.ks));
    gaps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_scores_its_median_steps_largest_window() {
        let s = [(0, 0.1), (0, 0.9), (1, 0.2), (2, 0.3), (2, 0.4)];
        assert_eq!(median_step_max(s.into_iter()), 0.4);
        assert_eq!(median_step_max(std::iter::empty()), 0.0);
    }

    #[test]
    fn ks_is_the_largest_gap_between_the_distribution_functions() {
        let weighed = |v: &[f32]| v.iter().map(|&x| (x, 1.0)).collect::<Vec<_>>();
        let ks = |a: &[f32], b: &[f32]| ks_statistic(&mut weighed(a), &mut weighed(b));
        assert_eq!(ks(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]), 0.0);
        assert_eq!(ks(&[1.0, 2.0], &[3.0, 4.0]), 1.0);
        assert!((ks(&[1.0, 2.0, 3.0, 4.0], &[3.0, 4.0, 5.0, 6.0]) - 0.5).abs() < 1e-9);
        // Weights count as repeated samples.
        let heavy = ks_statistic(&mut [(1.0, 3.0), (2.0, 1.0)], &mut [(1.0, 1.0), (2.0, 1.0)]);
        assert!((heavy - 0.25).abs() < 1e-9);
        assert_eq!(weighted_median(&[(1.0, 1.0), (5.0, 3.0)]), 5.0);
    }

    #[test]
    fn the_most_common_type_wins() {
        assert_eq!(most_common(&["a", "b", "b"]), Some("b"));
        assert_eq!(most_common(&[]), None);
    }
}
