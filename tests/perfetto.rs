//! The Perfetto export (`perfetto::write`) read back by our own ingest: the same events (the
//! same fingerprint, launch and forward→backward links) and the same report, on every real
//! trace of `../shared/traces` and on a generated one; its analysis tracks (findings over their
//! windows, flagged windows, the step split) as written; a range of steps; hostile names.

mod common;

use common::{shared_traces, trace_files};
use serde_json::Value;
use torchtraceap::ingest::{ingest_bytes, IngestOptions, Ingested};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect;
use torchtraceap::model::{Era, Trace};
use torchtraceap::perfetto::{self, ExportError, Exported};
use torchtraceap::report::Report;
use torchtraceap::share::fingerprint;
use torchtraceap_dev::synth::{generate, AntiPattern, Config, Injection, FIRST_STEP};

/// The skip reason `ingest` gives the export's async slices.
const ASYNC_SKIPPED: &str = "phase not used by PyTorch traces (async b/e/n, objects, samples)";

fn analyze(t: &Trace) -> Report {
    let a = Analysis::new(t);
    Report::new(&a, &detect::run(&a))
}

/// The export of `t` (of the steps `steps`, if given), its JSON and what it holds.
fn export(t: &Trace, report: &Report, steps: Option<(i64, i64)>) -> (Vec<u8>, Value, Exported) {
    let a = Analysis::new(t);
    let mut out = Vec::new();
    let done = perfetto::write(&mut out, &a, report, steps).unwrap();
    let json: Value = serde_json::from_slice(&out).expect("the export is valid JSON");
    (out, json, done)
}

fn read_back(bytes: &[u8], era: Era) -> Ingested {
    let options = IngestOptions {
        accept_other_chrome_traces: era == Era::NotPyTorch,
    };
    ingest_bytes(bytes, options).expect("the export reads back")
}

/// Checks that the export of `t` reads back as the same trace with the same report; returns
/// the export's JSON.
fn round_trip(name: &str, t: &Trace) -> Value {
    let report = analyze(t);
    let (bytes, json, done) = export(t, &report, None);
    let back = read_back(&bytes, t.meta.era);
    let u = &back.trace;
    assert_eq!(fingerprint(u), fingerprint(t), "{name}: events");
    assert_eq!(u.events.len(), t.events.len(), "{name}: event count");
    // Compared whole, printed as counts (a trace has thousands).
    assert!(u.events.kind == t.events.kind, "{name}: kinds");
    let count = |v: &Trace| (v.launches.len(), v.forward_backward.len());
    assert!(
        u.launches == t.launches && u.forward_backward == t.forward_backward,
        "{name}: launch and fwdbwd links {:?}, read back {:?}",
        count(t),
        count(u)
    );
    assert_eq!(u.meta.era, t.meta.era, "{name}: era");
    assert_eq!(
        serde_json::to_value(analyze(u)).unwrap(),
        serde_json::to_value(&report).unwrap(),
        "{name}: the report"
    );
    assert_eq!(
        back.report.skipped.get(ASYNC_SKIPPED).copied().unwrap_or(0),
        done.annotations,
        "{name}: only the analysis slices are skipped"
    );
    assert_eq!(done.events, t.events.len() as u64);
    assert!(done.cut.is_none());
    json
}

/// The export's async slices of `cat`: (name, start, end, args), in order of their begins.
fn slices(json: &Value, cat: &str) -> Vec<(String, f64, f64, Value)> {
    let mut open: Vec<(String, f64, Value)> = Vec::new();
    let mut done = Vec::new();
    for e in json["traceEvents"].as_array().unwrap() {
        if e["cat"] != cat {
            continue;
        }
        let ts = e["ts"].as_f64().unwrap();
        match e["ph"].as_str().unwrap() {
            "b" => open.push((e["name"].as_str().unwrap().into(), ts, e["args"].clone())),
            "e" => {
                let (name, start, args) = open.pop().expect("an e ends a b");
                assert_eq!(e["name"].as_str().unwrap(), name);
                done.push((name, start, ts, args));
            }
            other => panic!("{other} in the analysis tracks"),
        }
    }
    assert!(open.is_empty(), "every b ends");
    done.sort_by(|a, b| a.1.total_cmp(&b.1));
    done
}

#[test]
fn real_traces_read_back_with_the_same_events_and_report() {
    let Some(dir) = shared_traces("real_traces_read_back_with_the_same_events_and_report") else {
        return;
    };
    let (mut checked, mut findings) = (0, 0);
    for path in trace_files(&dir) {
        let bytes = std::fs::read(&path).unwrap();
        let Ok(ingested) = ingest_bytes(&bytes, IngestOptions::default()) else {
            continue;
        };
        let name = path.strip_prefix(&dir).unwrap().display().to_string();
        let json = round_trip(&name, &ingested.trace);
        findings += slices(&json, "ttap.finding").len();
        checked += 1;
    }
    eprintln!("{checked} real traces read back the same; {findings} finding slices");
    assert!(checked >= 60, "only {checked} shared traces read");
    assert!(findings > 0, "some real trace has findings");
}

fn generated(steps: u32) -> Trace {
    let c = Config {
        injections: (1..steps)
            .map(|step| Injection {
                pattern: AntiPattern::HostSync,
                step,
                severity: 0.9,
            })
            .chain((2..steps).map(|step| Injection {
                pattern: AntiPattern::DataLoader,
                step,
                severity: 0.9,
            }))
            .collect(),
        noise: true,
        ..Config::resnet50_a100(steps)
    };
    ingest_bytes(generate(&c).trace.as_bytes(), IngestOptions::default())
        .unwrap()
        .trace
}

#[test]
fn a_generated_trace_reads_back_and_its_tracks_hold_the_analysis() {
    let t = generated(6);
    let json = round_trip("generated", &t);
    let report = analyze(&t);
    assert!(
        report.findings.len() >= 2,
        "the injected patterns are found"
    );
    let origin_us = t.meta.span.unwrap().0 as f64 / 1e3;
    let found = slices(&json, "ttap.finding");
    for f in &report.findings {
        let mine: Vec<_> = found.iter().filter(|s| s.0 == f.id).collect();
        assert_eq!(mine.len(), f.windows.len(), "{}: a slice per window", f.id);
        for (_, start, end, args) in mine {
            assert_eq!(args["id"], f.id.as_str());
            assert_eq!(args["fix"], f.fix.as_str());
            assert_eq!(args["ms_per_step"], f.impact_ms_per_step);
            let w = f
                .windows
                .iter()
                .find(|w| ((start - origin_us) / 1e3 - w.start_ms).abs() < 1e-6)
                .expect("the slice is over one of the finding's windows");
            assert!(((end - start) / 1e3 - w.duration_ms).abs() < 1e-6);
            assert_eq!(args["step"], w.step);
        }
    }
    let flagged = slices(&json, "ttap.window_model");
    let scored = report
        .windows
        .iter()
        .filter(|w| {
            w.anomaly_probability
                .is_some_and(|p| torchtraceap::ml::Model::embedded().flags(p))
        })
        .count();
    assert!(scored > 0, "the model flags some window of this trace");
    assert_eq!(flagged.len(), scored);
    assert!(flagged.iter().all(|s| s.3["score"].as_f64().unwrap() > 0.0));
    // Each step's slice holds its split's parts, which tile it.
    let split = slices(&json, "ttap.step_split");
    let steps: Vec<_> = split.iter().filter(|s| s.0.starts_with("step ")).collect();
    assert_eq!(steps.len(), report.steps.len());
    for (step, entry) in steps.iter().zip(&report.steps) {
        let parts: f64 = split
            .iter()
            .filter(|s| !s.0.starts_with("step ") && s.1 >= step.1 && s.2 <= step.2)
            .map(|s| s.2 - s.1)
            .sum();
        assert!((parts / 1e3 - entry.duration_ms).abs() < 1e-6, "{}", step.0);
    }
}

#[test]
fn a_range_of_steps_holds_the_events_overlapping_it_and_says_what_is_cut() {
    let t = generated(8);
    let report = analyze(&t);
    let (from, to) = (FIRST_STEP + 3, FIRST_STEP + 5);
    let (bytes, json, done) = export(&t, &report, Some((from, to)));
    let cut = done.cut.clone().expect("a range says what it cuts");
    assert!(cut.contains(&format!("steps {from}..{to}")), "{cut}");
    assert!(done.events < t.events.len() as u64);
    assert_eq!(json["ttapExport"]["cut"], cut.as_str());
    let back = read_back(&bytes, t.meta.era).trace;
    let numbers: Vec<i64> = back.steps.iter().map(|s| s.number).collect();
    assert_eq!(numbers, (from..=to).collect::<Vec<_>>());
    let step = |n: i64| t.steps.iter().find(|s| s.number == n).unwrap();
    let (lo, hi) = (step(from).start, step(to).end);
    let e = &back.events;
    assert!((0..e.len()).all(|i| e.start[i] < hi && e.end(i) >= lo));
    let inside = (0..t.events.len())
        .filter(|&i| t.events.start[i] >= lo && t.events.end(i) <= hi)
        .count();
    assert!(e.len() >= inside, "every event inside the steps is kept");
    for (_, start, end, _) in slices(&json, "ttap.finding") {
        assert!(start * 1e3 >= lo as f64 - 1.0 && end * 1e3 <= hi as f64 + 1.0);
    }
    let a = Analysis::new(&t);
    let err = perfetto::write(&mut Vec::new(), &a, &report, Some((from, 999))).unwrap_err();
    assert!(matches!(err, ExportError::NoStep(999, ..)), "{err}");
    assert!(
        err.to_string().contains(&format!("{FIRST_STEP}..")),
        "{err}"
    );
}

/// Names written to break out of a JSON string or a viewer.
const HOSTILE: &[&str] = &[
    "\"quoted\", \"ph\": \"X\"}, {\"x\": \"",
    "back\\slash\\",
    "</script><script>alert(1)</script>",
    "line\nbreak\r\ttab\u{0}nul\u{1f}\u{7f}",
    "\u{2028}\u{2029} separators",
    "\u{202e}evil\u{200b}\u{feff}",
    "]}]} closing",
    "emoji 🦀 and 中文",
];

#[test]
fn hostile_names_stay_data_and_read_back_as_written() {
    let mut events = vec![
        r#"{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}"#.to_string(),
        r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 50, "args": {"correlation": 1, "stream": 7, "device": 0}}"#.to_string(),
        r#"{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 5, "dur": 3, "args": {"correlation": 1}}"#.to_string(),
    ];
    for (k, h) in HOSTILE.iter().enumerate() {
        let s = serde_json::to_string(h).unwrap();
        events.push(format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": {s}, "pid": {s}, "tid": {s}, "ts": {}, "dur": 2, "args": {{"Input Dims": [[{k}]], "Input type": [{s}]}}}}"#,
            10 + 5 * k
        ));
        events.push(format!(
            r#"{{"ph": "M", "name": "thread_name", "pid": {s}, "tid": {s}, "args": {{"name": {s}}}}}"#
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": {s}, "name": "n", "pid": 1, "tid": 1, "ts": {}, "dur": 1}}"#,
            10 + 5 * k
        ));
    }
    let trace = format!(r#"{{"traceEvents": [{}]}}"#, events.join(",\n"));
    let t = ingest_bytes(trace.as_bytes(), IngestOptions::default())
        .unwrap()
        .trace;
    round_trip("hostile names", &t);
    // A saved report's text is data too.
    let g = generated(4);
    let (_, json, _) = export(&g, &hostile_report(&g), None);
    let found = slices(&json, "ttap.finding");
    assert!(!found.is_empty());
    for (name, _, _, args) in &found {
        assert!(HOSTILE.contains(&name.as_str()), "{name:?}");
        assert!(HOSTILE.contains(&args["fix"].as_str().unwrap()));
    }
}

/// The report of `t` with every finding's id, title and fix hostile.
fn hostile_report(t: &Trace) -> Report {
    let mut report = analyze(t);
    for (i, f) in report.findings.iter_mut().enumerate() {
        f.id = HOSTILE[i % HOSTILE.len()].into();
        f.title = HOSTILE[(i + 1) % HOSTILE.len()].into();
        f.fix = HOSTILE[(i + 2) % HOSTILE.len()].into();
    }
    report
}
