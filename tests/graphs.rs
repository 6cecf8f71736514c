//! CUDA and HIP graphs: the graph launches of the five shared traces that have them, and the
//! kernels they replayed, against an independent count over the raw JSON
//! (`tests/oracle/graphs.py`); a kernel without a correlation id tied to its replay by time; the
//! report's summary line. That a replay is one launch is in `detectors.rs`.

mod common;
mod kineto;
#[path = "common/oracle.rs"]
mod oracle;

use std::path::{Path, PathBuf};

use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect;
use torchtraceap::internals::graphs::{self, GraphSummary};
use torchtraceap::model::Trace;
use torchtraceap::modules::ModuleNode;
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
    // The trace records no run of the replayed kernels: all of their time is unattributed.
    let line = "544 kernels in 1 graph launch (9.66 ms of GPU time); none tied to the operator that launched it (the trace records no capture or run of the same kernels): 9.66 ms unattributed, without shapes, FLOPs or module below the graph launch";
    assert_eq!(g.line(), line);
    let md = r.to_markdown("sglang");
    assert!(md.contains(&format!("CUDA/HIP graphs: {line}.")), "{md}");
    assert!(
        md.contains("Graph replays run 99% of it, 99% in kernels not tied to the operator that launched them (9.656 ms)."),
        "{md}"
    );
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

/// A written capture and replay: a module `Block_0` runs `aten::mm` (fp16 4096², shapes
/// recorded), `aten::add` and `aten::relu` one launch each (the warm-up before a capture), then
/// outside any module one `cudaGraphLaunch` replays kernels named `replayed` (1 ms each).
fn capture_and_replay(replayed: [&str; 3]) -> Trace {
    let mut events = warm_up();
    events.extend(replay(replayed, 0));
    ingest(document(&events).as_bytes())
}

fn document(events: &[String]) -> String {
    kineto::document(
        &[kineto::device(0, "NVIDIA A100-SXM4-80GB", 8, 80 << 30)],
        "",
        events,
        "capture.pt.trace.json",
    )
}

fn host(cat: &str, name: &str, span: (i64, i64), args: &str) -> String {
    kineto::complete(cat, name, (100, 100), span, args)
}

fn kernel(name: &str, ts: i64, correlation: u64) -> String {
    kineto::complete(
        "kernel",
        name,
        (0, 7),
        (ts, 1000),
        &format!(r#""correlation": {correlation}, "device": 0, "stream": 7"#),
    )
}

/// Step 1: the warm-up, each op launched one by one under `Block_0`.
fn warm_up() -> Vec<String> {
    let mm =
        r#""Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["c10::Half", "c10::Half"]"#;
    let launch = |ts: i64, correlation: u64| {
        host(
            "cuda_runtime",
            "cudaLaunchKernel",
            (ts, 5),
            &format!(r#""correlation": {correlation}"#),
        )
    };
    vec![
        host("user_annotation", "ProfilerStep#1", (0, 5000), ""),
        host("python_function", "nn.Module: Block_0", (10, 100), ""),
        host("cpu_op", "aten::mm", (20, 20), mm),
        launch(25, 1),
        host("cpu_op", "aten::add", (50, 20), ""),
        launch(55, 2),
        host("cpu_op", "aten::relu", (80, 20), ""),
        launch(85, 3),
        kernel("gemm_fp16_tensorop", 200, 1),
        kernel("add_kernel", 1300, 2),
        kernel("relu_kernel", 2400, 3),
    ]
}

/// Step 2, `at` µs later: one `cudaGraphLaunch` replays kernels named `replayed`.
fn replay(replayed: [&str; 3], at: i64) -> Vec<String> {
    let mut events = vec![
        host("user_annotation", "ProfilerStep#2", (at + 5000, 5000), ""),
        host(
            "cuda_runtime",
            "cudaGraphLaunch",
            (at + 5010, 10),
            r#""correlation": 9"#,
        ),
    ];
    for (k, name) in replayed.iter().enumerate() {
        events.push(kernel(name, at + 5100 + 1100 * k as i64, 9));
    }
    events
}

/// The same capture and replay recorded as two traces, as a serving engine's are: the replay
/// alone, an hour later on its clock, with the warm-up's trace given beside it.
fn replay_with_capture_beside(replayed: [&str; 3]) -> Trace {
    let read = |events: &[String]| {
        ingest_bytes(document(events).as_bytes(), IngestOptions::default()).expect("a trace")
    };
    read(&replay(replayed, 3_600_000_000))
        .with_capture(&read(&warm_up()), "warm-up.pt.trace.json")
        .trace
}

/// The replayed kernel named `name` and the operator its work is charged to.
fn operator_of(t: &Trace, name: &str) -> (u32, Option<String>) {
    let k = (0..t.events.len())
        .rev()
        .find(|&i| t.name_of(i) == name)
        .expect(name) as u32;
    let op = t.origin_of(k).and_then(|l| {
        let p = t.events.parent[l as usize];
        (p != torchtraceap::model::NONE).then(|| t.name_of(p as usize).to_string())
    });
    (k, op)
}

/// Each of the three replayed kernels is charged to the operator that launched it, and stays
/// the graph launch's record; the graph summary counts all three tied.
fn each_kernel_has_its_operator(t: &Trace) -> GraphSummary {
    for (kernel, op) in [
        ("gemm_fp16_tensorop", "aten::mm"),
        ("add_kernel", "aten::add"),
        ("relu_kernel", "aten::relu"),
    ] {
        let (k, got) = operator_of(t, kernel);
        assert_eq!(got.as_deref(), Some(op), "{kernel}");
        let launch = t.launch_of(k).expect("a launch");
        assert_eq!(t.name_of(launch as usize), "cudaGraphLaunch", "{kernel}");
    }
    let g = summary(t).expect("a graph summary");
    assert_eq!((g.kernels, g.tied_kernels), (3, 3));
    g
}

/// The roofline of `step` (`(number, start, end)`) charges the replayed GEMM its op's FLOPs
/// (no graph-kernel time unattributed, `shapes_ms` with shapes), and the module tree holds every
/// kernel in a module frame: `Block_0`'s node.
fn charged_and_held(t: &Trace, step: (i64, i64, i64), shapes_ms: f64) -> ModuleNode {
    let r = torchtraceap::roofline::analyze(t, Some(Some(0)), &[step]).expect("a GPU");
    assert_eq!(
        (r.coverage.graph_ms, r.coverage.graph_unattributed_ms),
        (3.0, 0.0)
    );
    assert_eq!(r.coverage.shapes_ms, shapes_ms, "{:?}", r.coverage);
    let mfu = r.steps[0].mfu.expect("an MFU");
    assert!(
        (mfu - 2.0 * 4096f64.powi(3) / 312e12 / 5e-3).abs() < 1e-9,
        "{mfu}"
    );
    let tree = torchtraceap::modules::ModuleTree::of(t).expect("a module tree");
    assert_eq!(tree.outside_gpu_ns, 0);
    tree.nodes
        .into_iter()
        .find(|n| n.name == "Block_0")
        .expect("Block_0")
}

/// With the replay's second kernel renamed (`fused_add_kernel`), the other two keep their
/// operators and it is left to its graph launch (whose parent is the step, not an operator),
/// counted untied: the graph summary.
fn the_renamed_kernel_stays_untied(t: &Trace) -> GraphSummary {
    for (kernel, op) in [
        ("gemm_fp16_tensorop", "aten::mm"),
        ("relu_kernel", "aten::relu"),
    ] {
        assert_eq!(operator_of(t, kernel).1.as_deref(), Some(op), "{kernel}");
    }
    let (k, op) = operator_of(t, "fused_add_kernel");
    assert_eq!(op.as_deref(), Some("ProfilerStep#2"));
    assert_eq!(t.origin_of(k), t.launch_of(k));
    let g = summary(t).expect("a graph summary");
    assert_eq!((g.kernels, g.tied_kernels), (3, 2));
    g
}

#[test]
fn each_replayed_kernel_gets_the_operator_and_module_that_launched_it_before_the_capture() {
    let t = capture_and_replay(["gemm_fp16_tensorop", "add_kernel", "relu_kernel"]);
    let g = each_kernel_has_its_operator(&t);
    assert!((g.tied_ms - 3.0).abs() < 1e-12, "{g:?}");
    // The roofline charges the replayed GEMM its op's FLOPs; the module tree counts the replay
    // for the module that ran its operators.
    let block = charged_and_held(&t, (2, 5_000_000, 10_000_000), 2.0);
    assert_eq!(block.gpu_ns, 6_000_000, "{block:?}");
}

#[test]
fn a_replayed_kernel_whose_name_differs_stays_unattributed_and_counted() {
    // The replay's second kernel is not the run's: it is left to its graph launch, the others
    // keep their operators.
    let t = capture_and_replay(["gemm_fp16_tensorop", "fused_add_kernel", "relu_kernel"]);
    let g = the_renamed_kernel_stays_untied(&t);
    assert!(g.line().ends_with("2 of them (2.00 ms) tied by kernel order and name to the operators that launched the same kernels, 1.00 ms unattributed"), "{}", g.line());
    let r = torchtraceap::roofline::analyze(&t, Some(Some(0)), &[(2, 5_000_000, 10_000_000)])
        .expect("a GPU");
    assert_eq!(r.coverage.graph_unattributed_ms, 1.0);
    // Replays that agree with no recorded run at half their kernels are not tied at all.
    let t = capture_and_replay(["gemm_fp16_tensorop", "a_kernel", "b_kernel"]);
    let g = summary(&t).expect("a graph summary");
    assert_eq!(g.tied_kernels, 0);
}

#[test]
fn a_capture_trace_given_beside_the_replay_ties_each_replayed_kernel_to_its_operator() {
    let t = replay_with_capture_beside(["gemm_fp16_tensorop", "add_kernel", "relu_kernel"]);
    let g = each_kernel_has_its_operator(&t);
    assert!(
        g.line()
            .ends_with("(in the capture trace warm-up.pt.trace.json), 0.00 ms unattributed"),
        "{}",
        g.line()
    );
    let captured = t.captured.as_ref().expect("a capture");
    assert_eq!((captured.replayed, captured.tied), (3, 3));
    // The replayed GEMM gets its op's FLOPs; the module tree counts the replay for the module
    // that ran its operators at capture (its calls and host time are the capture's: not counted).
    let block = charged_and_held(&t, (2, 3_600_005_000_000, 3_600_010_000_000), 1.0);
    assert_eq!((block.gpu_ns, block.calls, block.cpu_ns), (3_000_000, 0, 0));
    // What the trace records is the replay's alone: the grafted events are in no track and
    // count nowhere else.
    let alone = ingest(
        document(&replay(
            ["gemm_fp16_tensorop", "add_kernel", "relu_kernel"],
            3_600_000_000,
        ))
        .as_bytes(),
    );
    assert_eq!(t.recorded(), 0..alone.events.len());
    assert_eq!(t.count_by_kind(), alone.count_by_kind());
    assert_eq!(
        torchtraceap::model::fingerprint::fingerprint(&t),
        torchtraceap::model::fingerprint::fingerprint(&alone)
    );
}

#[test]
fn a_kernel_the_capture_trace_runs_under_another_name_stays_unattributed() {
    let t = replay_with_capture_beside(["gemm_fp16_tensorop", "fused_add_kernel", "relu_kernel"]);
    the_renamed_kernel_stays_untied(&t);
    // A capture of other work ties nothing, and says so.
    let t = replay_with_capture_beside(["gemm_fp16_tensorop", "a_kernel", "b_kernel"]);
    let g = summary(&t).expect("a graph summary");
    assert_eq!(g.tied_kernels, 0);
    assert!(
        g.line().contains("neither the trace nor the capture trace warm-up.pt.trace.json records a run of the same kernels"),
        "{}",
        g.line()
    );
}
