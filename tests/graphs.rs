//! CUDA and HIP graphs: the graph launches of the five shared traces that have them, and the
//! kernels they replayed, against an independent count over the raw JSON
//! (`tests/oracle/graphs.py`); a kernel without a correlation id tied to its replay by time; the
//! report's summary line. That a replay is one launch is in `detectors.rs`.

mod common;
mod kineto;
#[path = "common/oracle.rs"]
mod oracle;

use std::path::{Path, PathBuf};

use torchtraceap::analysis::Analysis;
use torchtraceap::detect;
use torchtraceap::graphs::{self, GraphSummary};
use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::model::Trace;
use torchtraceap::report::Report;
use torchtraceap::timeline::{inspect, Layout};

/// The shared traces that launch graphs (`../shared/traces/CATALOG.md`).
const WITH_GRAPHS: [&str; 5] = [
    "facebookresearch__HolisticTraceAnalysis/tests__data__negative_queue_length_values_check__rank0.json.gz",
    "facebookresearch__HolisticTraceAnalysis/tests__data__trace_diff__test__test.json.gz",
    "AMD-AGI__TraceLens/tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
    "AMD-AGI__TraceLens/tests__traces__inference__vllm_decode_full__graph_execution.json.gz",
    "AMD-AGI__TraceLens/tests__traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz",
];

fn ingest(text: &[u8]) -> Trace {
    ingest_bytes(text, IngestOptions::default())
        .expect("a trace")
        .trace
}

/// The shared trace `file` for `test`; `None` (said) where the shared traces are absent.
fn shared(test: &str, file: &str) -> Option<Trace> {
    let dir = common::shared_traces(test)?;
    Some(ingest(&std::fs::read(dir.join(file)).expect("readable")))
}

fn summary(t: &Trace) -> Option<GraphSummary> {
    let steps: Vec<(i64, i64, i64)> = t.steps.iter().map(|s| (s.number, s.start, s.end)).collect();
    graphs::summarize(t, &steps)
}

/// Milliseconds and the oracle's microseconds agree (the model reads decimal µs exactly).
fn same_ms(ms: f64, us: &serde_json::Value) -> bool {
    (ms - us.as_f64().expect("a number") / 1e3).abs() < 1e-6
}

#[test]
fn graph_launches_and_their_kernels_agree_with_the_oracle() {
    let Some(dir) = common::shared_traces("graph launches against the oracle") else {
        return;
    };
    // The five, and a trace without graphs: no summary, as the oracle counts none.
    let plain = "facebookresearch__HolisticTraceAnalysis/tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz";
    let files: Vec<PathBuf> = common::trace_files(&dir)
        .into_iter()
        .filter(|f| WITH_GRAPHS.iter().chain([&plain]).any(|w| f.ends_with(w)))
        .collect();
    assert_eq!(
        files.len(),
        6,
        "the traces of the test in {}",
        dir.display()
    );
    let mut per_step = 0;
    for line in oracle::run("graphs.py", &files).lines() {
        let want: serde_json::Value = serde_json::from_str(line).expect("oracle JSON");
        let file = Path::new(want["file"].as_str().expect("a file"));
        let t = ingest(&std::fs::read(file).expect("readable"));
        let name = file.display();
        let Some(got) = summary(&t) else {
            assert_eq!(
                want["launches"], 0,
                "{name}: the oracle counts graph launches"
            );
            continue;
        };
        assert_eq!(got.launches, want["launches"], "{name}: launches");
        assert_eq!(got.kernels, want["kernels"], "{name}: kernels");
        assert!(
            same_ms(got.gpu_ms, &want["gpu_us"]),
            "{name}: {} ms",
            got.gpu_ms
        );
        let steps = want["steps"].as_object().expect("steps");
        if steps.is_empty() {
            continue;
        }
        assert_eq!(
            got.steps.len(),
            steps.len(),
            "{name}: steps with graph launches"
        );
        for s in &got.steps {
            let w = &steps[&s.step.to_string()];
            assert_eq!(
                (s.launches, s.kernels),
                (
                    w["launches"].as_u64().unwrap(),
                    w["kernels"].as_u64().unwrap()
                ),
                "{name}: step {}",
                s.step
            );
            assert!(same_ms(s.gpu_ms, &w["gpu_us"]), "{name}: step {}", s.step);
            per_step += 1;
        }
    }
    // HTA's two traces have ProfilerStep ranges: 5 and 6 steps with graph launches.
    assert_eq!(per_step, 11);
}

#[test]
fn the_report_and_its_markdown_say_how_many_kernels_graphs_replayed() {
    let Some(t) = shared("the report's graph summary", WITH_GRAPHS[2]) else {
        return;
    };
    let a = Analysis::new(&t);
    let r = Report::new(&a, &detect::run(&a));
    let g = r.graphs.as_ref().expect("a graph summary");
    assert_eq!(
        g.line(),
        "544 kernels in 1 graph launch (9.66 ms of GPU time)"
    );
    assert!(r
        .to_markdown("sglang")
        .contains("CUDA/HIP graphs: 544 kernels in 1 graph launch (9.66 ms of GPU time)."));
    // A report saved before the field reads back without it.
    let mut json: serde_json::Value = serde_json::to_value(&r).unwrap();
    json.as_object_mut().unwrap().remove("graphs");
    let old = Report::from_json(&json.to_string()).expect("an older report");
    assert_eq!(old.graphs, None);
}

#[test]
fn kernels_without_a_correlation_id_join_the_replay_they_ran_in() {
    // One cudaGraphLaunch (correlation 1) replays kernels on stream 7 from 100 to 160 µs; the
    // kernel at 120 µs lost its correlation id. After the replay, at 200 µs, another kernel
    // without one on the same stream, and one during the replay on stream 9, ran outside it.
    let kernel = |name: &str, stream: i64, ts: i64, args: &str| {
        kineto::complete("kernel", name, (0, stream), (ts, 10), args)
    };
    let with = |c: u64| format!(r#""correlation": {c}, "device": 0, "stream": 7"#);
    let events = [
        kineto::complete(
            "cuda_runtime",
            "cudaGraphLaunch",
            (100, 100),
            (90, 5),
            r#""correlation": 1"#,
        ),
        kineto::complete(
            "cuda_runtime",
            "cudaLaunchKernel",
            (100, 100),
            (96, 3),
            r#""correlation": 2"#,
        ),
        kernel("first", 7, 100, &with(1)),
        kernel("lost", 7, 120, r#""device": 0, "stream": 7"#),
        kernel("last", 7, 150, &with(1)),
        kernel("after", 7, 200, r#""device": 0, "stream": 7"#),
        kernel("elsewhere", 9, 130, r#""device": 0, "stream": 9"#),
        kernel(
            "launched",
            9,
            150,
            r#""correlation": 2, "device": 0, "stream": 9"#,
        ),
    ];
    let doc = kineto::document(
        &[kineto::device(0, "NVIDIA A100-SXM4-80GB", 8, 80 << 30)],
        "",
        &events,
        "graph.pt.trace.json",
    );
    let t = ingest(doc.as_bytes());
    let launched_by = |name: &str| {
        let k = (0..t.events.len())
            .find(|&i| t.name_of(i) == name)
            .expect(name);
        t.launch_of(k as u32)
            .map(|l| t.name_of(l as usize).to_string())
    };
    assert_eq!(launched_by("first").as_deref(), Some("cudaGraphLaunch"));
    assert_eq!(launched_by("lost").as_deref(), Some("cudaGraphLaunch"));
    assert_eq!(launched_by("last").as_deref(), Some("cudaGraphLaunch"));
    assert_eq!(launched_by("after"), None);
    assert_eq!(launched_by("elsewhere"), None);
    assert_eq!(launched_by("launched").as_deref(), Some("cudaLaunchKernel"));
    let g = summary(&t).expect("a graph summary");
    assert_eq!((g.launches, g.kernels), (1, 3));
    assert!((g.gpu_ms - 0.03).abs() < 1e-12);
}

#[test]
fn a_replayed_kernel_and_its_graph_launch_are_one_click_apart_on_the_timeline() {
    // HTA's A100 training trace: 70 graph launches of 1 to 8 kernels.
    let Some(t) = shared("graph launches on the timeline", WITH_GRAPHS[0]) else {
        return;
    };
    let l = Layout::new(&t);
    let calls = graphs::launches(&t);
    let third = inspect::details(&t, &l, calls[2]);
    let replayed = third.launched.len();
    assert!(replayed > 0, "the third graph launch replayed kernels");
    assert_eq!(
        third.graph.as_deref(),
        Some(format!("graph launch 3 of 70 (of {replayed} kernels)").as_str())
    );
    let kernel = inspect::details(&t, &l, third.launched[0].event);
    assert_eq!(kernel.launched_by.map(|p| p.event), Some(calls[2]));
    assert_eq!(
        kernel.graph.as_deref(),
        Some(format!("launched by graph launch 3 of 70 (of {replayed} kernels)").as_str())
    );
}
