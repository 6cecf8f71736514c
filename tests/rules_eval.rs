//! The rule detectors on the labelled real traces: the committed tables (`models/RULES.md`)
//! are what `ttap-dev eval-rules` makes today, and every target of the figures-rubric table holds
//! (the independent table's targets are reported in it, not asserted yet).

mod common;

use std::path::Path;

use common::{shared_traces, trace_files};
use torchtraceap::internals::detect::scoring::{
    evaluate, markdown, score, LabelSet, RealLabels, TraceResult,
};

fn labels() -> RealLabels {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/real-labels.json");
    RealLabels::from_json(&std::fs::read_to_string(path).expect("the label file is committed"))
        .expect("the committed label file reads")
}

#[test]
fn the_committed_rules_table_is_regenerated_and_meets_its_targets() {
    let Some(dir) = shared_traces("the_committed_rules_table_is_regenerated_and_meets_its_targets")
    else {
        return;
    };
    let labels = labels();
    assert!(
        labels.traces.len() >= 40,
        "at least 40 labelled real traces, found {}",
        labels.traces.len()
    );
    let files = trace_files(&dir);
    for l in &labels.traces {
        assert!(
            files.contains(&dir.join(&l.trace)),
            "labelled trace {} is not in {}",
            l.trace,
            dir.display()
        );
    }
    let evaluation = evaluate(&labels, &dir).expect("every labelled trace reads");
    let scores = &evaluation.rubric;
    let missed = scores.missed_targets();
    assert!(missed.is_empty(), "targets missed:\n{}", missed.join("\n"));
    assert!(
        scores.healthy_controls >= 2,
        "the healthy controls are labelled"
    );
    assert!(
        evaluation.independent.traces >= 60,
        "the independent labels judge at least 60 real traces, found {}",
        evaluation.independent.traces
    );
    let table = markdown(&evaluation, "ttap-dev eval-rules");
    let committed =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("models/RULES.md"))
            .expect("models/RULES.md is committed");
    assert_eq!(
        committed, table,
        "models/RULES.md is out of date: run `cargo run --release -- eval-rules` and commit it"
    );
}

#[test]
fn each_label_set_is_scored_only_on_the_traces_it_judges() {
    let labels = RealLabels::from_json(
        r#"{"format": "torchtraceap.real-labels", "version": 1, "traces": [
          {"trace": "a.json", "workload": "training", "healthy_control": false, "method": "figures-rubric",
           "present": {"host-device-sync": "3% idle after syncs"}, "absent": {"allocator-churn": "none"},
           "independent": {
             "host-device-sync": {"label": "absent", "method": "independent-script", "reason": "0.1% idle", "figures": {"sync_calls": 2}},
             "allocator-churn": {"label": "present", "method": "source", "reason": "empty_cache() every step"}}},
          {"trace": "b.json", "workload": "inference", "healthy_control": false,
           "independent": {"host-device-sync": {"label": "present", "method": "independent-script", "reason": "6% idle after syncs"}}},
          {"trace": "c.json", "workload": "inference", "healthy_control": false, "independent_note": "not JSON"}
        ]}"#,
    )
    .expect("a label file with both sets reads");
    let result = |trace: &str, fired: &[&str]| TraceResult {
        trace: trace.into(),
        fired: fired.iter().map(|id| id.to_string()).collect(),
        findings_pct: 0.0,
        max_step_claimed_pct: 0.0,
    };
    let results = [
        result("a.json", &["host-device-sync"]),
        result("b.json", &[]),
        result("c.json", &["host-device-sync"]),
    ];
    let ids = ["host-device-sync", "allocator-churn"];

    let rubric = score(&labels, &results, &ids, LabelSet::Rubric);
    assert_eq!(
        rubric.traces, 1,
        "only a.json carries figures-rubric labels"
    );
    let (sync, alloc) = (&rubric.detectors[0], &rubric.detectors[1]);
    assert_eq!((sync.true_positives, sync.false_positives), (1, 0));
    assert_eq!((alloc.true_negatives, alloc.false_negatives), (1, 0));

    let independent = score(&labels, &results, &ids, LabelSet::Independent);
    assert_eq!(
        independent.traces, 2,
        "c.json carries no label of either set"
    );
    let (sync, alloc) = (&independent.detectors[0], &independent.detectors[1]);
    assert_eq!(
        (
            sync.false_positives,
            sync.false_negatives,
            sync.unjudged_fired
        ),
        (1, 1, 0)
    );
    assert_eq!(alloc.false_negatives, 1);
    assert!(
        sync.wrong
            .contains(&"missed on b.json (label: 6% idle after syncs)".to_string()),
        "a disagreement names the label's figures: {:?}",
        sync.wrong
    );
}
