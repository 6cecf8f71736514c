//! The window detector: the embedded model loads and scores injected windows high and clean ones
//! low (on an architecture and a GPU it was not trained on), a tiny forest trains and round-trips
//! through its file format, malformed model files are refused, the AUROC on a hand-checked case,
//! and the report's window scores and unexplained regions.

// Only `shared_traces` of it: `trace_files` serves the tests that read every trace.
#[allow(dead_code)]
mod common;

use torchtraceap::detect::{self, Analysis};
use torchtraceap::features::{of_trace, NAMES};
use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::ml::eval::auroc;
use torchtraceap::ml::train::{data_set, fit, Params, TRAIN_GPUS, TRAIN_MODELS};
use torchtraceap::ml::Model;
use torchtraceap::report::Report;
use torchtraceap::synth::{generate, AntiPattern, Config, Gpu, Injection, Model as Arch};

#[test]
fn auroc_on_a_hand_checked_case() {
    // Positives 0.35 and 0.8 against negatives 0.1 and 0.4: 3 of the 4 pairs ordered right.
    assert_eq!(
        auroc(&[0.1, 0.4, 0.35, 0.8], &[false, false, true, true]),
        Some(0.75)
    );
    // A tie counts half; a perfect ranking is 1; without both classes there is no AUROC.
    assert_eq!(auroc(&[0.5, 0.5], &[true, false]), Some(0.5));
    assert_eq!(auroc(&[0.9, 0.2, 0.3], &[true, false, false]), Some(1.0));
    assert_eq!(auroc(&[0.9, 0.2], &[true, true]), None);
}

fn swin_on_h100(injections: Vec<Injection>) -> Config {
    Config {
        model: Arch::SwinT,
        gpu: Gpu::H100,
        training: true,
        steps: 6,
        batch: 64,
        seed: 11,
        injections,
        noise: true,
    }
}

#[test]
fn the_embedded_model_flags_injected_windows_of_an_unseen_architecture_and_gpu() {
    let model = Model::embedded();
    let injections = vec![
        Injection {
            pattern: AntiPattern::DataLoader,
            step: 2,
            severity: 0.7,
        },
        Injection {
            pattern: AntiPattern::HostSync,
            step: 4,
            severity: 0.7,
        },
    ];
    let generated = generate(&swin_on_h100(injections));
    let t = ingest_bytes(generated.trace.as_bytes(), IngestOptions::default())
        .unwrap()
        .trace;
    let a = Analysis::new(&t);
    for w in of_trace(&t, &a.steps) {
        let s = model.score(&w.values);
        let label = generated
            .labels
            .iter()
            .find(|l| l.step == w.step && l.phase == w.phase.label());
        match label {
            Some(l) => {
                assert!(model.flags(s.probability), "{l:?}: {s:?}");
                assert_eq!(s.kind, l.pattern, "{l:?}");
            }
            None => assert!(
                !model.flags(s.probability),
                "step {} {}: {s:?}",
                w.step,
                w.phase.label()
            ),
        }
    }
}

#[test]
fn a_tiny_forest_trains_and_round_trips_through_its_file() {
    let rows = data_set(&TRAIN_MODELS, &TRAIN_GPUS, 12, 1).unwrap();
    assert!(rows.iter().any(|r| r.label.is_some()) && rows.iter().any(|r| r.label.is_none()));
    let model = fit(
        &rows,
        Params {
            trees: 5,
            max_depth: 6,
            ..Params::COMMITTED
        },
    )
    .unwrap();
    assert_eq!(model.anomaly.trees.len(), 5);
    let text = serde_json::to_string(&model).unwrap();
    assert_eq!(Model::from_json(&text).unwrap(), model);
    // It has learnt its own training windows.
    let right = rows
        .iter()
        .filter(|r| model.flags(model.score(&r.features.values).probability) == r.label.is_some())
        .count();
    assert!(
        right as f64 >= 0.9 * rows.len() as f64,
        "{right} of {}",
        rows.len()
    );
}

#[test]
fn malformed_model_files_are_refused_with_the_reason() {
    let good = serde_json::to_value(Model::embedded()).unwrap();
    let refused = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut m = good.clone();
        edit(&mut m);
        Model::from_json(&m.to_string()).unwrap_err()
    };
    assert!(refused(&|m| m["version"] = 9.into()).contains("version 9"));
    assert!(refused(&|m| m["features"] = serde_json::json!(["x"])).contains("other features"));
    assert!(
        refused(&|m| m["anomaly"]["trees"][0]["right"][0] = 1_000_000.into())
            .contains("anomaly forest's tree 0 is malformed")
    );
    assert!(Model::from_json("{}")
        .unwrap_err()
        .contains("not a window-forest model"));
    assert_eq!(Model::embedded().features, NAMES);
}

#[test]
fn the_report_carries_window_scores_and_unexplained_regions() {
    let injections = vec![Injection {
        pattern: AntiPattern::LaunchBound,
        step: 3,
        severity: 0.5,
    }];
    let t = ingest_bytes(
        generate(&swin_on_h100(injections)).trace.as_bytes(),
        IngestOptions::default(),
    )
    .unwrap()
    .trace;
    let a = Analysis::new(&t);
    let detected = detect::run(&a);
    let report = Report::new(&a, &detected);
    let findings = detected.findings;
    for phase in ["forward", "backward"] {
        let w = report
            .windows
            .iter()
            .find(|w| w.step == 13 && w.phase == phase)
            .unwrap();
        assert!(
            Model::embedded().flags(w.anomaly_probability.unwrap()),
            "{w:?}"
        );
        assert_eq!(
            w.predicted_type.as_deref(),
            Some("launch-bound-small-kernels")
        );
    }
    // Tiny kernels in one step of five stay under the rule's steady-state threshold: the rule is
    // silent, so these windows are unexplained suspicious regions, and the only ones.
    assert!(
        !findings
            .iter()
            .any(|f| f.id == "launch-bound-small-kernels"),
        "{findings:?}"
    );
    let mut unexplained: Vec<(i64, &str)> = report
        .unexplained
        .iter()
        .map(|u| (u.step, u.phase.as_str()))
        .collect();
    unexplained.sort_unstable();
    assert_eq!(unexplained, vec![(13, "backward"), (13, "forward")]);
    assert!(report
        .to_markdown("t")
        .contains("Unexplained suspicious regions (flagged, and no finding of that type concerns the step): step 13"));
}

#[test]
fn a_cpu_only_trace_is_outside_the_detector_s_domain() {
    let Some(dir) = common::shared_traces("a_cpu_only_trace_is_outside_the_detector_s_domain")
    else {
        return;
    };
    let path = dir.join("local__torch-2.15-cpu/resnet18_train_step_cpu.pt.trace.json.gz");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let t = ingest_bytes(&bytes, IngestOptions::default())
        .unwrap()
        .trace;
    assert!(!torchtraceap::ml::applies_to(&t));
    let a = Analysis::new(&t);
    let report = Report::new(&a, &detect::run(&a));
    assert!(!report.windows.is_empty());
    assert!(report
        .windows
        .iter()
        .all(|w| w.anomaly_probability.is_none() && w.predicted_type.is_none()));
    assert!(report.unexplained.is_empty());
    assert!(report
        .to_markdown("t")
        .contains("Not applied: the trace holds no GPU work"));
}
