//! smartcore's own trees (the embedded model's, rebuilt by `ml::by_smartcore`) give the same
//! probabilities as the compact walk on every window of every shared trace, and how long each
//! takes on them: the figure that decides which one scores windows (ARCHITECTURE.md). Measure
//! with `cargo test --release --test ml_smartcore -- --nocapture`.

mod common;

use std::time::Instant;

use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::features::of_trace;
use torchtraceap::ml::by_smartcore::{matrix, SmartcoreForest};
use torchtraceap::ml::{shows_evidence, Model};

/// Timed runs of each scorer.
const RUNS: usize = 15;

#[test]
fn smartcore_s_trees_vote_as_the_compact_walk_on_every_window_of_the_shared_traces() {
    let Some(dir) = common::shared_traces(
        "smartcore_s_trees_vote_as_the_compact_walk_on_every_window_of_the_shared_traces",
    ) else {
        return;
    };
    let mut windows: Vec<Vec<f32>> = Vec::new();
    let mut traces = 0;
    for path in common::trace_files(&dir) {
        let bytes = std::fs::read(&path).unwrap();
        // Files that are not traces are refused by ingest (`tests/shared_traces.rs`).
        let Ok(ingested) = ingest_bytes(&bytes, IngestOptions::default()) else {
            continue;
        };
        let a = Analysis::new(&ingested.trace);
        traces += 1;
        windows.extend(
            of_trace(&ingested.trace, &a.steps)
                .into_iter()
                .map(|f| f.values),
        );
    }
    assert!(
        traces >= 50 && windows.len() >= 1000,
        "{traces} traces, {} windows",
        windows.len()
    );
    let rows: Vec<&[f32]> = windows.iter().map(Vec::as_slice).collect();
    let mut matrix_s = f64::MAX;
    for _ in 0..RUNS {
        let started = Instant::now();
        std::hint::black_box(matrix(&rows).unwrap());
        matrix_s = matrix_s.min(started.elapsed().as_secs_f64());
    }
    let x = matrix(&rows).unwrap();
    let model = Model::embedded();
    let mut walk_s = 0.0;
    let mut smartcore_s = 0.0;
    for (name, forest) in [("anomaly", &model.anomaly), ("kind", &model.kind)] {
        let reference = SmartcoreForest::of(forest).unwrap();
        let theirs = reference.shares(&x).unwrap();
        let ours: Vec<Vec<f32>> = rows.iter().map(|r| forest.shares(r)).collect();
        // The fastest of several alternating runs of each: a single run of a few milliseconds
        // on shared cores is mostly noise.
        let (mut fastest_smartcore, mut fastest_walk) = (f64::MAX, f64::MAX);
        for _ in 0..RUNS {
            let started = Instant::now();
            std::hint::black_box(reference.shares(&x).unwrap());
            fastest_smartcore = fastest_smartcore.min(started.elapsed().as_secs_f64());
            let started = Instant::now();
            std::hint::black_box(rows.iter().map(|r| forest.shares(r)).collect::<Vec<_>>());
            fastest_walk = fastest_walk.min(started.elapsed().as_secs_f64());
        }
        smartcore_s += fastest_smartcore;
        walk_s += fastest_walk;
        for (k, (o, t)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(o, t, "the {name} forest on window {k}: {:?}", rows[k]);
        }
        if name == "anomaly" {
            // The model's probability is smartcore's share of "anomalous" votes wherever the
            // window shows the evidence of an anti-pattern, and 0 elsewhere.
            for (r, t) in rows.iter().zip(&theirs) {
                let expected = if shows_evidence(r) { t[1] } else { 0.0 };
                assert_eq!(model.score(r).probability, expected, "{r:?}");
            }
        }
    }
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!(
            "{} windows of {traces} shared traces, both forests ({} + {} trees): smartcore per \
             tree {:.2} ms and {:.2} ms to build its matrix, compact walk {:.2} ms (fastest of \
             {RUNS} runs each): smartcore takes {:.1}x the walk's time, {:.1}x with its matrix\n",
            windows.len(),
            model.anomaly.trees.len(),
            model.kind.trees.len(),
            smartcore_s * 1e3,
            matrix_s * 1e3,
            walk_s * 1e3,
            smartcore_s / walk_s,
            (smartcore_s + matrix_s) / walk_s
        )
        .as_bytes(),
    );
}
