//! The `ttap-dev` binary: the generator's files, the window model's training and evaluation
//! reports, the labels they read, and how a failing command exits.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ttap_dev(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ttap-dev"))
        .args(args)
        .output()
        .expect("ttap-dev runs")
}

fn temp_file(dir: impl AsRef<Path>, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.as_ref().join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
    path
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A command that fails says so once, after `error: `, naming what failed and where (here the
/// labels file that holds no labels), and exits 2 without writing its output.
#[test]
fn a_failing_command_names_the_file_it_could_not_use() {
    let scratch = tempfile::tempdir().unwrap();
    let bad = temp_file(&scratch, "not-labels.json", b"{\"a\": 1}");
    let table = bad.with_file_name("never-written.md");
    let out = ttap_dev(&[
        "eval-rules",
        "--labels",
        bad.to_str().unwrap(),
        "--out",
        table.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).lines().collect::<Vec<_>>(),
        [format!(
            "error: {}: not a real-trace label file: missing field `format` at line 1 column 8",
            bad.display()
        )]
    );
    assert!(!table.exists());
}

#[test]
fn synth_writes_a_trace_and_labels_that_features_joins() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let (trace, labels) = (dir.join("synth.json"), dir.join("synth.labels.json"));
    let out = ttap_dev(&[
        "synth",
        "--model",
        "vit_b16",
        "--gpu",
        "h100",
        "--steps",
        "4",
        "--batch",
        "16",
        "--inject",
        "host-device-sync@2:0.7",
        "--out",
        trace.to_str().unwrap(),
        "--labels",
        labels.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = ttap_dev(&[
        "features",
        trace.to_str().unwrap(),
        "--labels",
        labels.to_str().unwrap(),
    ]);
    assert!(rows.status.success(), "{}", stderr(&rows));
    let labelled: Vec<(i64, String)> = stdout(&rows)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["label"] != "none")
        .map(|r| {
            (
                r["step"].as_i64().unwrap(),
                r["phase"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(labelled, vec![(12, "forward".to_string())]);

    let bad = ttap_dev(&[
        "synth",
        "--out",
        trace.to_str().unwrap(),
        "--inject",
        "dataloader-bottleneck@9",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("past the last step"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn synth_with_ranks_writes_one_trace_and_labels_file_per_rank() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("ranks");
    let out = ttap_dev(&[
        "synth",
        "--ranks",
        "2",
        "--steps",
        "3",
        "--batch",
        "8",
        "--inject",
        "dataloader-bottleneck@2:0.5@rank1",
        "--out",
        dir.to_str().unwrap(),
        "--labels",
        dir.join("labels-{rank}.json").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    for (rank, labelled) in [(0, false), (1, true)] {
        let trace = dir.join(format!("rank-{rank}.pt.trace.json"));
        let ingested = torchtraceap::ingest_bytes(
            &std::fs::read(&trace).unwrap(),
            torchtraceap::IngestOptions::default(),
        )
        .unwrap();
        let summary = torchtraceap::Summary::of(&ingested, 1);
        assert_eq!(
            (summary.rank, summary.world_size, summary.backend.as_deref()),
            (Some(rank), Some(2), Some("nccl"))
        );
        let labels = std::fs::read_to_string(dir.join(format!("labels-{rank}.json"))).unwrap();
        assert_eq!(
            labels.contains("dataloader-bottleneck"),
            labelled,
            "{labels}"
        );
    }
    for (args, says) in [
        (
            &["--ranks", "2", "--inject", "dataloader-bottleneck@1@rank2"][..],
            "past the last rank",
        ),
        (
            &["--inject", "dataloader-bottleneck@1@rank0"][..],
            "needs --ranks",
        ),
    ] {
        let bad = ttap_dev(&[&["synth", "--out", dir.to_str().unwrap()][..], args].concat());
        assert_eq!(bad.status.code(), Some(2));
        assert!(stderr(&bad).contains(says), "{}", stderr(&bad));
    }
}

#[test]
fn train_writes_a_model_that_eval_reads_and_reports_on() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let (model, training, evaluation, base_set) = (
        dir.join("model.json"),
        dir.join("TRAINING.md"),
        dir.join("EVALUATION.md"),
        dir.join("base-set.bin.gz"),
    );
    let out = ttap_dev(&[
        "train",
        "--traces",
        "10",
        "--trees",
        "3",
        "--out",
        model.to_str().unwrap(),
        "--report",
        training.to_str().unwrap(),
        "--base-set",
        base_set.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = std::fs::read_to_string(&training).unwrap();
    assert!(report.contains("10 generated traces"), "{report}");
    // The base set for retraining in the browser: every anomalous window of the ten scenarios.
    let base =
        torchtraceap::ml::base_set::BaseSet::decode(&std::fs::read(&base_set).unwrap()).unwrap();
    assert!(base.labels.iter().any(Option::is_some) && base.labels.iter().any(Option::is_none));
    let out = ttap_dev(&[
        "eval",
        "--model",
        model.to_str().unwrap(),
        "--traces",
        "4",
        "--kmeans-traces",
        "10",
        "--clusters",
        "3",
        "--real",
        dir.join("no-traces-here").to_str().unwrap(),
        "--out",
        evaluation.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = std::fs::read_to_string(&evaluation).unwrap();
    for line in [
        "| random forest (this model) |",
        "| rule detectors (finding confidence as score) |",
        "| k-means (distance to the nearest centroid) |",
        "Scoring 10000 windows",
        "SKIPPED: no trace under",
    ] {
        assert!(report.contains(line), "{line} missing from:\n{report}");
    }
    // A model file that is not one is refused with the file's name.
    let out = ttap_dev(&["eval", "--model", training.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("TRAINING.md: not a window-forest model"));
}

#[test]
fn labels_exported_by_the_web_app_are_read_by_features_and_scored_by_eval() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let trace = dir.join("labelled.pt.trace.json");
    let out = ttap_dev(&[
        "synth",
        "--out",
        trace.to_str().unwrap(),
        "--inject",
        "dataloader-bottleneck@3:0.8",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ingested = torchtraceap::ingest::ingest_bytes(
        &std::fs::read(&trace).unwrap(),
        torchtraceap::ingest::IngestOptions::default(),
    )
    .unwrap();
    let fp = torchtraceap::share::fingerprint(&ingested.trace);
    // What the web app's Export labels writes: the generator's entries with the window's index
    // in its step, the trace's name and fingerprint.
    let label = |step: i64, phase: &str, window: usize, pattern: &str| {
        torchtraceap::ml::labels::WindowLabel {
            step,
            phase: phase.into(),
            pattern: pattern.into(),
            window: Some(window),
            trace: Some("labelled.pt.trace.json".into()),
            fingerprint: Some(fp.clone()),
        }
    };
    let labels = vec![
        label(13, "data loading", 0, "dataloader-bottleneck"),
        label(14, "forward", 1, "none"),
    ];
    let file = temp_file(
        &scratch,
        "web.labels.json",
        torchtraceap::ml::labels::to_json(&labels).as_bytes(),
    );
    let out = ttap_dev(&[
        "eval",
        "--labels",
        file.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("2 labels from"), "{text}");
    assert!(
        text.contains("| 13 | data loading | 1 | `dataloader-bottleneck` |"),
        "{text}"
    );
    assert!(text.contains("| 14 | forward | 2 | `none` |"), "{text}");
    assert!(
        text.contains("The model agrees with 2 of 2 labelled windows"),
        "{text}"
    );
    assert!(
        text.contains("AUROC of the probability, anti-pattern against \"none\": 1.000"),
        "{text}"
    );

    let out = ttap_dev(&[
        "features",
        trace.to_str().unwrap(),
        "--labels",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let labelled: Vec<(i64, &str)> = rows
        .iter()
        .filter(|r| r["label"] != "none")
        .map(|r| (r["step"].as_i64().unwrap(), r["label"].as_str().unwrap()))
        .collect();
    assert_eq!(labelled, [(13, "dataloader-bottleneck")]);

    // Another trace: the labels are not for it.
    let other = dir.join("other.pt.trace.json");
    let out = ttap_dev(&["synth", "--seed", "2", "--out", other.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    for args in [
        vec![
            "eval",
            "--labels",
            file.to_str().unwrap(),
            "--trace",
            other.to_str().unwrap(),
        ],
        vec![
            "features",
            other.to_str().unwrap(),
            "--labels",
            file.to_str().unwrap(),
        ],
    ] {
        let out = ttap_dev(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&out).contains("none of the 2 labels in"),
            "{}",
            stderr(&out)
        );
    }
    // A label naming a window the trace does not have.
    let stray = temp_file(
        &scratch,
        "stray.labels.json",
        torchtraceap::ml::labels::to_json(&[label(99, "forward", 0, "none")]).as_bytes(),
    );
    let out = ttap_dev(&[
        "eval",
        "--labels",
        stray.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("label 0 of")
            && stderr(&out).contains("(step 99 forward of labelled.pt.trace.json) names no window"),
        "{}",
        stderr(&out)
    );
    // --labels without a trace, and with the scenario options, is refused by the parser.
    let out = ttap_dev(&["eval", "--labels", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let out = ttap_dev(&[
        "eval",
        "--labels",
        file.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "--traces",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
