//! The embedded window model on the hand-labelled **real** traces (`models/real-labels.json`):
//! the targets its evaluation report (`models/EVALUATION.md`, `ttap-dev eval`) shows, checked on
//! every run: trace AUROC of at least 0.85 and no flagged window on a healthy control.

mod common;

use torchtraceap::internals::detect::scoring::RealLabels;
use torchtraceap::ml::Model;
use torchtraceap_dev::ml::real::{figures, score_labelled};

#[test]
fn the_window_model_meets_its_targets_on_the_labelled_real_traces() {
    let Some(dir) =
        common::shared_traces("the_window_model_meets_its_targets_on_the_labelled_real_traces")
    else {
        return;
    };
    let labels = RealLabels::from_json(include_str!("../models/real-labels.json")).unwrap();
    let files = common::trace_files(&dir);
    for l in &labels.traces {
        assert!(
            files.contains(&dir.join(&l.trace)),
            "labelled trace {} is not among the shared traces",
            l.trace
        );
    }
    let model = Model::embedded();
    let rows = score_labelled(model, None, &labels, &dir).unwrap();
    let f = figures(&rows, model.threshold);
    assert!(f.positives >= 30 && f.negatives >= 10, "{f:?}");
    let auroc = f.forest.auroc.unwrap();
    assert!(
        auroc >= 0.85,
        "trace AUROC {auroc:.3} on the real labelled set"
    );
    let flagged: Vec<(&str, usize)> = rows
        .iter()
        .filter(|r| r.healthy_control && r.flagged_windows > 0)
        .map(|r| (r.trace.as_str(), r.flagged_windows))
        .collect();
    assert!(flagged.is_empty(), "healthy controls flagged: {flagged:?}");
    assert!(f.healthy_windows > 0);
}
