//! Fleet reports: what `scripts/fleet/fleet.py` writes, read back by `fleet::Fleet` (the app's
//! reader), and forged ones refused with the place that fails.

mod synth;

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use torchtraceap::fleet::{Fleet, FleetError};
use torchtraceap_dev::synth::{AntiPattern, Config, DataParallel, Model};

const TTAP: &str = env!("CARGO_BIN_EXE_ttap");

fn run(command: &mut Command) -> String {
    let out = command.output().expect("the command starts");
    assert!(
        out.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// Two generated jobs: a 2-rank run with a DataLoader stall on every rank, and one healthy
/// trace; and the fleet report `fleet.py`'s own functions make of them (its Ray-free half).
fn fleet_json(root: &Path) -> String {
    let stalls = (1..5)
        .map(|step| synth::at(AntiPattern::DataLoader, step, 0.9))
        .collect();
    let dp = DataParallel {
        world_size: 2,
        rank_injections: Vec::new(),
    };
    synth::synth(
        &root.join("loader-job"),
        &synth::config(5, 1, stalls),
        Some(dp),
    );
    std::fs::create_dir_all(root.join("healthy")).unwrap();
    let vit = Config {
        model: Model::VitB16,
        ..synth::config(5, 1, Vec::new())
    };
    synth::synth(&root.join("healthy/vit.pt.trace.json"), &vit, None);
    let scripts = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/fleet"));
    let program = "import json, sys\n\
                   sys.path.insert(0, sys.argv[1])\n\
                   import fleet\n\
                   rels = fleet.trace_paths(sys.argv[3])\n\
                   summaries = fleet.analyze_batch(sys.argv[2], sys.argv[3], rels)\n\
                   sys.stdout.write(fleet.fleet_json(fleet.merge(summaries)))";
    run(Command::new("python3")
        .args(["-c", program])
        .arg(scripts)
        .arg(TTAP)
        .arg(root))
}

#[test]
fn the_fleet_jobs_report_reads_back_whole() {
    let root = tempfile::tempdir().unwrap();
    let text = fleet_json(root.path());
    assert!(
        Fleet::looks_like(&text[..64]),
        "the app recognizes a fleet report by its first bytes, whatever its length: {}",
        &text[..64]
    );
    let fleet = Fleet::from_json(&text).expect("fleet.py's report reads");
    assert_eq!((fleet.traces, fleet.analyzed), (3, 3));
    assert!(fleet.failed.is_empty());
    assert_eq!(fleet.jobs.len(), 2, "{:?}", fleet.jobs);
    assert_eq!(
        fleet.jobs[0].job, "loader-job",
        "the stalled job loses the most"
    );
    let loader = fleet
        .anti_patterns
        .iter()
        .find(|p| p.id == "dataloader-bottleneck")
        .expect("the injected DataLoader stall is in the fleet report");
    assert_eq!(loader.traces, 2, "found on both ranks");
    assert_eq!(fleet.worst_traces.len(), 3);
    let raw: Value = serde_json::from_str(&text).unwrap();
    let parts = raw["mean_split_ms_per_step"].as_object().unwrap().len();
    assert!(parts > 0);
    assert_eq!(
        fleet.split().len(),
        parts,
        "every split part is one this version knows"
    );
}

/// A small report with every list filled, as `fleet.py` writes it.
fn valid() -> Value {
    json!({
        "format": "torchtraceap.fleet", "version": 1, "traces": 3, "analyzed": 2,
        "failed": [{"trace": "job/broken.json", "error": "not JSON"}],
        "anti_patterns": [{"id": "dataloader-bottleneck", "traces": 2, "jobs": 1,
            "ms_per_step_sum": 30.5, "ms_total": 152.5, "severity": {"high": 2}}],
        "jobs": [{"job": "job", "traces": 2, "recoverable_ms_per_step": 30.5, "worst_rank": 1,
            "slowest_rank": 1, "mean_step_ms": 80.0,
            "anti_patterns": {"dataloader-bottleneck": [0, 1]}, "outlier_ranks": []}],
        "worst_traces": [{"trace": "job/rank-1.pt.trace.json", "job": "job", "rank": 1,
            "mean_step_ms": 81.0, "recoverable_pct": 19.5, "recoverable_ms_per_step": 15.8,
            "top_finding": "dataloader-bottleneck"}],
        "mean_split_ms_per_step": {"busy_matmul_conv": 40.0, "idle_data_loading": 15.2}
    })
}

fn refused(edit: impl FnOnce(&mut Value)) -> FleetError {
    let mut v = valid();
    edit(&mut v);
    Fleet::from_json(&v.to_string()).expect_err("a forged fleet report is refused")
}

#[test]
fn forged_fleet_reports_are_refused_where_they_fail() {
    assert!(Fleet::from_json(&valid().to_string()).is_ok());
    let at = |e: FleetError| match e {
        FleetError::Bounds { at, .. } => at,
        other => panic!("expected a bounds error, got {other}"),
    };
    assert_eq!(
        at(refused(
            |v| v["anti_patterns"][0]["id"] = json!("visit-evil-example")
        )),
        "anti_patterns[0].id",
        "an id this version does not know would put the file's words on the page"
    );
    assert_eq!(
        at(refused(
            |v| v["worst_traces"][0]["top_finding"] = json!("<b>x</b>")
        )),
        "worst_traces[0].top_finding"
    );
    assert_eq!(
        at(refused(
            |v| v["jobs"][0]["anti_patterns"] = json!({"made-up": [1]})
        )),
        "jobs[0].anti_patterns"
    );
    assert_eq!(
        at(refused(|v| v["jobs"][0]["mean_step_ms"] = json!(-1.0))),
        "jobs[0].mean_step_ms"
    );
    assert_eq!(
        at(refused(
            |v| v["worst_traces"][0]["recoverable_pct"] = json!(250.0)
        )),
        "worst_traces[0].recoverable_pct"
    );
    assert_eq!(
        at(refused(
            |v| v["worst_traces"][0]["trace"] = json!("a".repeat(5_000))
        )),
        "worst_traces[0].trace"
    );
    assert_eq!(
        at(refused(|v| v["jobs"][0]["worst_rank"] = json!(1u64 << 30))),
        "jobs[0].worst_rank"
    );
    assert_eq!(
        at(refused(
            |v| v["mean_split_ms_per_step"]["idle_coffee"] = json!(1.0)
        )),
        "mean_split_ms_per_step"
    );
    assert_eq!(
        at(refused(
            |v| v["anti_patterns"][0]["severity"] = json!({"dire": 1})
        )),
        "anti_patterns[0].severity"
    );
    assert_eq!(at(refused(|v| v["analyzed"] = json!(9))), "analyzed");
    assert!(matches!(
        refused(|v| v["version"] = json!(2)),
        FleetError::Version { found: 2 }
    ));
    assert!(matches!(
        refused(|v| v["format"] = json!("torchtraceap.report")),
        FleetError::Format { .. }
    ));
    let message = refused(|v| v["traces"] = json!("three")).to_string();
    assert!(
        message.contains("not a fleet report") && message.contains("fleet.py"),
        "{message}"
    );
}
