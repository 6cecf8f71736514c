//! The rule detectors on the labelled real traces: the committed tables (`models/RULES.md`)
//! are what `ttap eval-rules` makes today, and every target of the figures-rubric table holds
//! (the independent table's targets are reported in it, not asserted yet).

mod common;

use std::path::Path;

use common::{shared_traces, trace_files};
use torchtraceap::detect::scoring::{evaluate, markdown, RealLabels};

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
    let table = markdown(&evaluation, "ttap eval-rules");
    let committed =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("models/RULES.md"))
            .expect("models/RULES.md is committed");
    assert_eq!(
        committed, table,
        "models/RULES.md is out of date: run `cargo run --release -- eval-rules` and commit it"
    );
}
