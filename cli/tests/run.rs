//! Multi-rank runs (`run`, `ttap analyze` on a folder): generated 8-rank data-parallel runs with
//! a straggler injected on one rank in one step (found on that rank, that step, in data
//! loading), on one rank in every step (load imbalance), and none (no finding); the real
//! per-rank traces of param's 8-rank DLRM job; and the CLI's run view in Markdown and JSON.

#[path = "../../tests/common/mod.rs"]
mod common;
mod profiles;
mod synth;
mod ttap;

use std::path::PathBuf;

use profiles::profile_of_bytes;
use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect;
use torchtraceap::profile::Profile;
use torchtraceap::run::{is_run, RunView};
use torchtraceap_dev::synth::{
    generate_ranks, AntiPattern, Config, DataParallel, Injection, FIRST_STEP,
};
use ttap::ttap;

const WORLD: u32 = 8;

fn config() -> Config {
    profiles::resnet50(3, Vec::new(), false)
}

fn stall(rank: u32, step: u32) -> (u32, Injection) {
    (
        rank,
        Injection {
            pattern: AntiPattern::DataLoader,
            step,
            severity: 0.8,
        },
    )
}

/// The run's profiles: each rank ingested, analyzed and reduced, one at a time.
fn profiles(rank_injections: Vec<(u32, Injection)>) -> Vec<Profile> {
    let dp = DataParallel {
        world_size: WORLD,
        rank_injections,
    };
    let profiles: Vec<Profile> = generate_ranks(&config(), &dp)
        .iter()
        .enumerate()
        .map(|(r, g)| profile_of_bytes(&format!("rank {r}"), g.trace.as_bytes()))
        .collect();
    assert!(is_run(&profiles), "the ranks of one run");
    profiles
}

fn run(rank_injections: Vec<(u32, Injection)>) -> RunView {
    RunView::new(&profiles(rank_injections))
}

#[test]
fn a_straggler_is_found_on_its_rank_and_step_in_data_loading() {
    let view = run(vec![stall(5, 5)]);
    assert_eq!(view.ranks.len(), WORLD as usize);
    assert_eq!(
        view.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(),
        (0..WORLD as i64).collect::<Vec<_>>()
    );
    let step = FIRST_STEP + 5;
    assert_eq!(view.findings.len(), 1, "{:#?}", view.findings);
    let f = &view.findings[0];
    assert_eq!((f.id.as_str(), f.rank), ("straggler", 5), "{}", f.summary);
    assert_eq!(f.steps, vec![step]);
    assert_eq!(
        f.part.as_deref(),
        Some("idle: data loading"),
        "{}",
        f.summary
    );
    assert!(f.others_wait_ms > 10.0, "{}", f.summary);
    let row = view
        .steps
        .iter()
        .find(|s| s.step == step)
        .expect("the step");
    assert_eq!(row.critical_rank, Some(5));
    // The others waited for it in their collectives; it did not.
    let wait = |r: usize| row.wait_ms[r].expect("every rank has the step");
    assert!(wait(5) < 1.0 && (0..8).filter(|&r| r != 5).all(|r| wait(r) > 10.0));
    println!("{}", torchtraceap::run::render::markdown(&view));
}

#[test]
fn a_rank_slow_in_every_step_is_load_imbalance_and_a_clean_run_has_no_finding() {
    let view = run((1..8).map(|step| stall(2, step)).collect());
    assert_eq!(view.findings.len(), 1, "{:#?}", view.findings);
    let f = &view.findings[0];
    assert_eq!(
        (f.id.as_str(), f.rank),
        ("load-imbalance", 2),
        "{}",
        f.summary
    );
    assert_eq!(f.steps.len(), 7, "{}", f.summary);
    assert_eq!(view.ranks[2].critical_steps, 7);

    let mut ranks = profiles(Vec::new());
    let clean = RunView::new(&ranks);
    assert!(clean.findings.is_empty(), "{:#?}", clean.findings);
    // Not one run: another world size, or a rank twice.
    ranks[1].world_size = Some(2);
    assert!(!is_run(&ranks));
    ranks[1].world_size = ranks[0].world_size;
    ranks[1].rank = ranks[0].rank;
    assert!(!is_run(&ranks));
}

#[test]
fn the_real_dlrm_ranks_make_one_run() {
    let Some(dir) = common::shared_traces("the real 8-rank DLRM run") else {
        return;
    };
    // param's DLRM replay inputs: one trace per rank of an 8-rank V100 job, one step each.
    let files: Vec<PathBuf> = common::trace_files(&dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("dlrm_kineto__worker"))
        .collect();
    assert_eq!(files.len(), 8, "{files:?}");
    let profiles: Vec<Profile> = files
        .iter()
        .map(|f| {
            let bytes = std::fs::read(f).expect("readable");
            let t = ingest_bytes(&bytes, IngestOptions::default())
                .expect("ingests")
                .trace;
            let a = Analysis::new(&t);
            Profile::new(&f.display().to_string(), &a, &detect::run(&a).findings)
        })
        .collect();
    assert!(is_run(&profiles));
    let view = RunView::new(&profiles);
    let mut ranks: Vec<i64> = view.ranks.iter().map(|r| r.rank).collect();
    ranks.sort_unstable();
    assert_eq!(ranks, (0..8).collect::<Vec<_>>());
    assert_eq!(view.steps.len(), 1, "one shared step");
    let step = &view.steps[0];
    assert!(step.own_ms.iter().all(Option::is_some), "every rank has it");
    // The rank that spent least in collectives arrived last: it waited for nobody.
    let waits: Vec<f64> = step.wait_ms.iter().map(|w| w.unwrap()).collect();
    assert_eq!(waits.iter().copied().fold(f64::INFINITY, f64::min), 0.0);
    assert!(waits.iter().any(|&w| w > 1.0), "{waits:?}");
    println!("{}", torchtraceap::run::render::markdown(&view));
}

#[test]
fn ttap_analyze_on_a_folder_prints_the_run_view() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let d = dir.to_str().unwrap();
    let dp = DataParallel {
        world_size: 8,
        rank_injections: vec![(5, synth::at(AntiPattern::DataLoader, 5, 0.8))],
    };
    synth::synth(dir, &synth::config(8, 1, Vec::new()), Some(dp));
    let (code, md) = ttap(&["analyze", d]);
    assert_eq!(code, 0);
    assert!(md.starts_with("# Run: 8 ranks"), "{md}");
    assert!(md.contains("**straggler** (high): rank 5"), "{md}");
    assert_eq!(
        md.matches("# TorchTraceAP report:").count(),
        8,
        "each rank's report"
    );
    let (code, json) = ttap(&["analyze", "--format", "json", d]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["run"]["findings"][0]["rank"], 5);
    assert_eq!(v["run"]["findings"][0]["steps"][0], FIRST_STEP + 5);
    assert_eq!(v["reports"].as_array().map(Vec::len), Some(8));
    assert!(v["reports"][0]["fingerprint"]
        .as_str()
        .is_some_and(|f| f.starts_with("fp1-")));
    // The straggler is a high-severity run finding: it gates CI.
    assert_eq!(ttap(&["analyze", "--fail-on", "high", d]).0, 1);
    // One rank alone is no run.
    let (_, one) = ttap(&["analyze", &format!("{d}/rank-0.pt.trace.json")]);
    assert!(!one.contains("# Run:"));
}
