//! An early look at a large trace (`ingest::early`): on a generated 160-step training trace
//! (ResNet-50 on an A100, over 64 MiB) with a DataLoader stall and SIMT fp32 GEMMs injected in
//! every step, written in time order and in Kineto's order (each host thread's ops, then the
//! runtime calls, GPU records and flows), the first eighth of the bytes or less already names
//! both, from the first steps only, held whole; a gzip file, a small one, and a capture with no
//! steps get none.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use torchtraceap::ingest::early::{read_early, MIN_FILE_BYTES};
use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::AnalyzedTrace;
use torchtraceap_dev::synth::{generate, AntiPattern, Config, Injection};

const STEPS: u32 = 160;

/// The generated trace, in time order as the generator writes it.
fn generated() -> String {
    generate(&Config {
        injections: (0..STEPS)
            .flat_map(|step| {
                [AntiPattern::DataLoader, AntiPattern::Fp32Simt].map(|pattern| Injection {
                    pattern,
                    step,
                    severity: 0.6,
                })
            })
            .collect(),
        ..Config::resnet50_a100(STEPS)
    })
    .trace
}

/// `trace` rewritten in Kineto's order: metadata, each host thread's ops in time order, then
/// everything else (runtime calls, GPU records, flows) in time order; one event per line.
fn kineto_order(trace: &str) -> String {
    let mut doc: serde_json::Map<String, Value> = serde_json::from_str(trace).expect("JSON");
    let Some(Value::Array(events)) = doc.remove("traceEvents") else {
        panic!("no traceEvents");
    };
    let ts = |e: &Value| e["ts"].as_f64().unwrap_or(0.0);
    let host = |e: &Value| {
        matches!(
            e["cat"].as_str(),
            Some("cpu_op" | "user_annotation" | "python_function")
        )
    };
    let (meta, timed): (Vec<Value>, Vec<Value>) = events.into_iter().partition(|e| e["ph"] == "M");
    let (mut ops, mut rest): (Vec<Value>, Vec<Value>) = timed.into_iter().partition(host);
    ops.sort_by(|a, b| {
        (a["tid"].to_string(), ts(a))
            .partial_cmp(&(b["tid"].to_string(), ts(b)))
            .expect("ordered")
    });
    rest.sort_by(|a, b| ts(a).total_cmp(&ts(b)));
    let mut out = String::from("{\n");
    for (k, v) in &doc {
        out.push_str(&format!("  {}: {v},\n", Value::String(k.clone())));
    }
    out.push_str("  \"traceEvents\": [\n");
    let lines: Vec<String> = meta
        .iter()
        .chain(&ops)
        .chain(&rest)
        .map(|e| format!("  {e}"))
        .collect();
    out.push_str(&lines.join(",\n"));
    out.push_str("\n]}\n");
    out
}

fn written(dir: impl AsRef<Path>, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.as_ref().join(name);
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(bytes))
        .expect("written");
    path
}

#[test]
fn the_first_steps_of_a_large_trace_name_its_problems_from_an_eighth_of_the_file() {
    let scratch = tempfile::tempdir().unwrap();
    let time_ordered = generated();
    assert!(
        time_ordered.len() as u64 >= MIN_FILE_BYTES,
        "{}",
        time_ordered.len()
    );
    for (name, text) in [
        ("time-order.json", time_ordered.clone()),
        ("kineto-order.json", kineto_order(&time_ordered)),
    ] {
        let path = written(&scratch, name, text.as_bytes());
        let e = read_early(&path)
            .expect("readable")
            .unwrap_or_else(|| panic!("{name}: no early look"));
        assert_eq!(e.len, text.len() as u64);
        assert!(e.read * 8 <= e.len, "{name}: read {} of {}", e.read, e.len);
        let t = &e.ingested.trace;
        // The first steps, whole: numbered from the first, fewer than a quarter of them.
        let numbers: Vec<i64> = t.steps.iter().map(|s| s.number).collect();
        assert!(
            numbers.len() >= 3 && numbers.len() < STEPS as usize / 4,
            "{name}: {numbers:?}"
        );
        assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
        let whole = ingest_bytes(text.as_bytes(), IngestOptions::default()).expect("a trace");
        let first: Vec<i64> = whole.trace.steps.iter().map(|s| s.number).collect();
        assert_eq!(numbers, first[..numbers.len()], "{name}");
        let analyzed = AnalyzedTrace::new(&e.ingested);
        let found: Vec<&str> = analyzed.findings().iter().map(|f| f.id).collect();
        for id in ["dataloader-bottleneck", "fp32-without-tensor-cores"] {
            assert!(found.contains(&id), "{name}: {id} not in {found:?}");
        }
        std::fs::remove_file(&path).ok();
    }
}

#[test]
fn a_compressed_a_small_or_a_stepless_trace_gets_no_early_look() {
    let scratch = tempfile::tempdir().unwrap();
    let text = generated();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text.as_bytes()).expect("compressed");
    let path = written(
        &scratch,
        "compressed.json.gz",
        &gz.finish().expect("compressed"),
    );
    assert!(read_early(&path).expect("readable").is_none());
    let small = written(&scratch, "small.json", &text.as_bytes()[..1 << 20]);
    assert!(read_early(&small).expect("readable").is_none());
    // Without ProfilerStep ranges nor a loop, nothing tells a whole step: no early look.
    let stepless = text
        .replace("ProfilerStep#", "Region ")
        .replace("enumerate(DataLoader)", "load batch");
    let path = written(&scratch, "stepless.json", stepless.as_bytes());
    assert!(read_early(&path).expect("readable").is_none());
}
