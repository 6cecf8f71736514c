//! Every real trace in `../shared/traces`: Kineto traces ingest with the same per-category counts
//! as an independent oracle (Python's stock json module, `tests/oracle/count_events.py`); each
//! negative file gets its expected message. Skips, saying so, where the folder is absent.

mod common;
#[path = "common/oracle.rs"]
mod oracle;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{shared_traces, trace_files};
use serde_json::Value;
use torchtraceap::ingest::{IngestError, IngestOptions, Ingested};
use torchtraceap::model::{EventKind, StepSource, Trace};

/// Tells whether an error is the expected one.
type Check = fn(&IngestError) -> bool;

/// Files that are not PyTorch profiler traces, and what must be said about each.
fn expected_refusal(name: &str) -> Option<(&'static str, Check)> {
    let table: [(&str, &str, Check); 12] = [
        ("._huvideo", "not JSON (AppleDouble)", |e| {
            e.to_string().contains("AppleDouble")
        }),
        ("Aphelack", "not PyTorch", |e| {
            matches!(e, IngestError::NotPyTorch { .. })
        }),
        ("allreduce_tp4", "not PyTorch", |e| {
            matches!(e, IngestError::NotPyTorch { .. })
        }),
        ("meta_events_only", "no timed events", |e| {
            matches!(e, IngestError::NoEvents { metadata: 4, .. })
        }),
        ("votenet_original", "legacy autograd profiler", |e| {
            matches!(e, IngestError::LegacyAutograd { .. })
        }),
        ("resnet_profile.json", "legacy autograd profiler", |e| {
            matches!(e, IngestError::LegacyAutograd { .. })
        }),
        ("vit_trace.json", "not PyTorch", |e| {
            matches!(e, IngestError::NotPyTorch { .. })
        }),
        ("chrome_trace.json", "not PyTorch", |e| {
            matches!(e, IngestError::NotPyTorch { .. })
        }),
        ("simple_add_et", "execution trace", |e| {
            matches!(e, IngestError::ExecutionTrace { .. })
        }),
        ("memory_timeline.raw", "memory timeline", |e| {
            matches!(e, IngestError::MemoryTimeline { .. })
        }),
        ("tf_trace_viewer", "not PyTorch", |e| {
            matches!(e, IngestError::NotPyTorch { .. })
        }),
        ("aisec-dell-server_", "PaddlePaddle", |e| {
            matches!(e, IngestError::PaddleTrace)
        }),
    ];
    table
        .iter()
        .find(|(frag, _, _)| name.contains(frag))
        // The PyTorch trace from the same Paddle-using repository is a real Kineto trace.
        .filter(|(frag, _, _)| *frag != "aisec-dell-server_" || !name.contains("2194513"))
        .map(|&(_, what, check)| (what, check))
}

fn oracle(files: &[PathBuf]) -> BTreeMap<String, Value> {
    serde_json::from_str(&oracle::run("count_events.py", files)).expect("oracle prints JSON")
}

fn kinds(t: &Trace, ks: &[EventKind]) -> u64 {
    t.count_by_kind()
        .iter()
        .filter(|(k, _)| ks.contains(k))
        .map(|&(_, n)| n as u64)
        .sum()
}

/// Compares one ingested trace with the oracle's counts; returns the differences.
fn compare(got: &Ingested, want: &Value) -> Vec<String> {
    let mut diffs = Vec::new();
    let t = &got.trace;
    fn check(diffs: &mut Vec<String>, what: &str, ours: u64, theirs: u64) {
        if ours != theirs {
            diffs.push(format!("{what}: ours {ours}, oracle {theirs}"));
        }
    }
    check(
        &mut diffs,
        "elements",
        got.report.elements,
        want["elements"].as_u64().unwrap(),
    );
    let cats: BTreeMap<String, u64> = serde_json::from_value(want["categories"].clone()).unwrap();
    if cats != got.report.categories {
        diffs.push(format!(
            "categories: ours {:?}, oracle {:?}",
            got.report.categories, cats
        ));
    }
    let g = &want["groups"];
    let group = |k: &str| g.get(k).and_then(Value::as_u64).unwrap_or(0);
    check(
        &mut diffs,
        "kernels",
        kinds(t, &[EventKind::GpuKernel, EventKind::Collective]),
        group("kernels"),
    );
    check(
        &mut diffs,
        "memcpy",
        kinds(t, &[EventKind::Memcpy]),
        group("memcpy"),
    );
    check(
        &mut diffs,
        "memset",
        kinds(t, &[EventKind::Memset]),
        group("memset"),
    );
    check(
        &mut diffs,
        "runtime calls",
        kinds(t, &[EventKind::RuntimeCall]),
        group("runtime"),
    );
    check(
        &mut diffs,
        "python functions",
        kinds(t, &[EventKind::PythonFunction]),
        group("python"),
    );
    check(
        &mut diffs,
        "ops, annotations and steps",
        kinds(
            t,
            &[
                EventKind::CpuOp,
                EventKind::UserAnnotation,
                EventKind::ProfilerStep,
            ],
        ),
        group("ops_and_steps"),
    );
    check(
        &mut diffs,
        "memory events",
        kinds(t, &[EventKind::Memory]),
        group("memory"),
    );
    check(
        &mut diffs,
        "devices",
        t.meta.devices.len() as u64,
        want["devices"].as_u64().unwrap(),
    );
    let steps = want["steps"].as_u64().unwrap();
    if steps > 0 {
        check(&mut diffs, "steps", t.steps.len() as u64, steps);
        if t.step_source != StepSource::ProfilerSteps {
            diffs.push("steps: expected ProfilerStep ranges".into());
        }
    } else if t.step_source == StepSource::ProfilerSteps {
        diffs.push("steps: expected iterations or the whole-trace fallback".into());
    }
    let mut linked: Vec<u32> = t.launches.iter().map(|l| l.gpu).collect();
    linked.dedup();
    let by_corr = want["linked_by_correlation"].as_u64().unwrap();
    if (linked.len() as u64) < by_corr {
        diffs.push(format!(
            "launch links: ours {}, at least {by_corr} by correlation id",
            linked.len()
        ));
    }
    if got.report.truncated || !got.report.skipped.is_empty() {
        diffs.push(format!(
            "unexpected truncation or skips: {:?}",
            got.report.skipped
        ));
    }
    diffs
}

fn read(path: &Path, options: IngestOptions) -> Result<Ingested, IngestError> {
    let file = std::fs::File::open(path).unwrap();
    torchtraceap::ingest::ingest_reader(file, options, 1 << 16, |_| {})
}

#[test]
fn every_shared_trace_is_read_as_the_oracle_counts_it_or_refused_with_its_message() {
    let Some(dir) = shared_traces(
        "every_shared_trace_is_read_as_the_oracle_counts_it_or_refused_with_its_message",
    ) else {
        return;
    };
    let files = trace_files(&dir);
    assert!(
        files.len() > 50,
        "expected the shared trace set, found {} files",
        files.len()
    );
    let oracle = oracle(&files);
    let mut failures = Vec::new();
    let mut read_ok = 0;
    for path in &files {
        let name = path
            .strip_prefix(&dir)
            .unwrap()
            .to_string_lossy()
            .to_string();
        let want = &oracle[&path.to_string_lossy().to_string()];
        match (
            read(path, IngestOptions::default()),
            expected_refusal(&name),
        ) {
            // A file cut mid-event (the 1 MiB head of a larger trace): Python's json refuses
            // it; we keep its complete events and must say it is cut.
            (Ok(got), None) if want.get("error").is_some() => {
                read_ok += 1;
                if !got.report.truncated || got.trace.events.is_empty() {
                    failures.push(format!(
                        "{name}: the oracle cannot parse it ({}), but it was read as whole",
                        want["error"]
                    ));
                }
            }
            (Ok(got), None) => {
                read_ok += 1;
                let diffs = compare(&got, want);
                if !diffs.is_empty() {
                    failures.push(format!("{name}: {}", diffs.join("; ")));
                }
            }
            (Err(e), Some((what, check))) => {
                if !check(&e) {
                    failures.push(format!("{name}: expected '{what}', got: {e}"));
                }
            }
            (Ok(_), Some((what, _))) => {
                failures.push(format!("{name}: read, but expected '{what}'"))
            }
            (Err(e), None) => failures.push(format!("{name}: refused: {e}")),
        }
    }
    eprintln!(
        "{read_ok} shared Kineto traces read and checked against the oracle, {} files in all",
        files.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} files differ:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn a_non_pytorch_chrome_trace_is_read_when_asked_for() {
    let Some(dir) = shared_traces("a_non_pytorch_chrome_trace_is_read_when_asked_for") else {
        return;
    };
    let path = dir.join("IBM__aiu-trace-analyzer/tests__test_data__allreduce_tp4.json");
    let got = read(
        &path,
        IngestOptions {
            accept_other_chrome_traces: true,
        },
    )
    .unwrap();
    let want = &oracle(std::slice::from_ref(&path))[&path.to_string_lossy().to_string()];
    // 56 B/E events pair into 28 slices on 16 threads, one with a tid above 2^63.
    assert_eq!(got.report.elements, want["elements"].as_u64().unwrap());
    assert_eq!(got.trace.events.len() * 2, got.report.elements as usize);
    assert!(got
        .trace
        .tracks
        .iter()
        .any(|t| got.trace.strings.get(t.tid) == "15514734831341844875"));
    assert!(got.report.skipped.is_empty(), "{:?}", got.report.skipped);
}

#[test]
fn inductor_kernels_are_named_by_the_ops_they_fuse() {
    let Some(dir) = shared_traces("Inductor kernel names") else {
        return;
    };
    let path = dir.join("AMD-AGI__TraceLens/tests__traces__torch_compile_triton__trace.json.gz");
    let ingested = torchtraceap::ingest::ingest_bytes(
        &std::fs::read(path).expect("readable"),
        IngestOptions::default(),
    )
    .expect("a trace");
    let summary = torchtraceap::summary::Summary::of(&ingested, 20);
    let compiled = |name: &str| {
        summary
            .top_kernels
            .iter()
            .find(|k| k.name == name)
            .unwrap_or_else(|| panic!("{name} among the top kernels"))
            .compiled
            .clone()
    };
    assert_eq!(
        compiled("triton_red_fused_add_mean_mul_pow_rsqrt_0").as_deref(),
        Some("Inductor reduction fusing add_mean_mul_pow_rsqrt")
    );
    assert_eq!(
        compiled("triton_poi_fused__unsafe_view_mul_silu_2").as_deref(),
        Some("Inductor element-wise fusing _unsafe_view_mul_silu")
    );
    // Other kernels say nothing of the kind.
    assert!(summary
        .top_kernels
        .iter()
        .filter(|k| !k.name.starts_with("triton_"))
        .all(|k| k.compiled.is_none()));
}
