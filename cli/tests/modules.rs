//! Per-module attribution (`modules`, `ttap modules`): on a trace written in the test, each
//! kernel counts for the module (or `record_function` label) enclosing the op that launched it,
//! backward kernels for the module that ran forward, and work outside every frame apart; on a
//! real ResNet-18 training trace the tree is consistent (a node holds at least its children's
//! GPU time, the top level and the outside add up to all GPU work) and backward is attributed.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::process::Command;

use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect;
use torchtraceap::modules::{Frames, ModuleNode, ModuleTree};
use torchtraceap::report::Report;
use torchtraceap::share;
use torchtraceap_dev::synth::{generate, AntiPattern, Config, Gpu, Injection, Model};

const TRACE: &str = r#"{"traceEvents": [
  {"ph": "X", "cat": "python_function", "name": "nn.Module: Net_0", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
  {"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_0", "pid": 1, "tid": 1, "ts": 10, "dur": 30},
  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 12, "dur": 26},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 14, "dur": 2, "args": {"correlation": 1}},
  {"ph": "X", "cat": "python_function", "name": "nn.Module: ReLU_0", "pid": 1, "tid": 1, "ts": 50, "dur": 10},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 51, "dur": 8},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 52, "dur": 2, "args": {"correlation": 2}},
  {"ph": "X", "cat": "user_annotation", "name": "head", "pid": 1, "tid": 1, "ts": 70, "dur": 20},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 72, "dur": 2, "args": {"correlation": 3}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110, "dur": 2, "args": {"correlation": 4}},
  {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: AddmmBackward0", "pid": 1, "tid": 2, "ts": 200, "dur": 40},
  {"ph": "X", "cat": "cpu_op", "name": "AddmmBackward0", "pid": 1, "tid": 2, "ts": 201, "dur": 38},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 205, "dur": 2, "args": {"correlation": 5}},
  {"ph": "s", "cat": "fwdbwd", "id": 9, "pid": 1, "tid": 1, "ts": 12, "name": "fwdbwd"},
  {"ph": "f", "cat": "fwdbwd", "id": 9, "pid": 1, "tid": 2, "ts": 201, "bp": "e", "name": "fwdbwd"},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 10, "args": {"correlation": 1, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "kernel", "name": "relu", "pid": 0, "tid": 7, "ts": 55, "dur": 5, "args": {"correlation": 2, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "kernel", "name": "head_kernel", "pid": 0, "tid": 7, "ts": 75, "dur": 7, "args": {"correlation": 3, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "kernel", "name": "stray", "pid": 0, "tid": 7, "ts": 115, "dur": 3, "args": {"correlation": 4, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm_backward", "pid": 0, "tid": 7, "ts": 210, "dur": 20, "args": {"correlation": 5, "device": 0, "stream": 7}}
]}"#;

fn node<'t>(tree: &'t ModuleTree, path: &str) -> &'t ModuleNode {
    tree.nodes
        .iter()
        .find(|n| n.path == path)
        .unwrap_or_else(|| panic!("no node {path}: {:#?}", tree.nodes))
}

#[test]
fn kernels_count_for_the_module_that_launched_them_backward_included() {
    let t = ingest_bytes(TRACE.as_bytes(), IngestOptions::default())
        .expect("ingests")
        .trace;
    let tree = ModuleTree::of(&t).expect("module frames");
    let us = 1000;
    assert_eq!(tree.gpu_ns, 45 * us);
    assert_eq!(
        tree.outside_gpu_ns,
        3 * us,
        "the stray launch outside Net_0"
    );
    let net = node(&tree, "Net_0");
    assert_eq!(
        (net.gpu_ns, net.backward_gpu_ns, net.kernels),
        (42 * us, 20 * us, 4)
    );
    assert_eq!((net.cpu_ns, net.calls, net.module), (100 * us, 1, true));
    let linear = node(&tree, "Net_0/Linear_0");
    assert_eq!(
        (linear.gpu_ns, linear.backward_gpu_ns, linear.kernels),
        (30 * us, 20 * us, 2)
    );
    assert_eq!(linear.depth, 1);
    assert_eq!(node(&tree, "Net_0/ReLU_0").gpu_ns, 5 * us);
    let head = node(&tree, "Net_0/head");
    assert_eq!((head.gpu_ns, head.module), (7 * us, false));
    // Preorder, children by GPU time: Linear_0 (30) before head (7) before ReLU_0 (5).
    let paths: Vec<&str> = tree.nodes.iter().map(|n| n.path.as_str()).collect();
    assert_eq!(
        paths,
        ["Net_0", "Net_0/Linear_0", "Net_0/head", "Net_0/ReLU_0"]
    );
    assert_eq!(tree.nodes[1].parent, Some(0));
}

#[test]
fn a_trace_without_frames_has_no_tree() {
    let text = r#"{"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 10}
    ]}"#;
    let t = ingest_bytes(text.as_bytes(), IngestOptions::default())
        .expect("ingests")
        .trace;
    assert!(ModuleTree::of(&t).is_none());
}

#[test]
fn a_real_resnet_training_trace_is_attributed_forward_and_backward() {
    let Some(dir) = common::shared_traces("the real module-tree check") else {
        return;
    };
    let name = "tests__traces__mi300__ddp_resnet18_no_pool__train_resnet18.json.gz";
    let path = common::trace_files(&dir)
        .into_iter()
        .find(|p| p.ends_with(name))
        .expect("the ResNet-18 training trace among the shared traces");
    let bytes = std::fs::read(&path).expect("readable");
    let t = ingest_bytes(&bytes, IngestOptions::default())
        .expect("ingests")
        .trace;
    let tree = ModuleTree::of(&t).expect("module frames");
    let top: i64 = tree
        .nodes
        .iter()
        .filter(|n| n.parent.is_none())
        .map(|n| n.gpu_ns)
        .sum();
    assert_eq!(top + tree.outside_gpu_ns, tree.gpu_ns);
    for (k, n) in tree.nodes.iter().enumerate() {
        let children: i64 = tree
            .nodes
            .iter()
            .filter(|c| c.parent == Some(k))
            .map(|c| c.gpu_ns)
            .sum();
        assert!(n.gpu_ns >= children, "{}", n.path);
        assert!(n.backward_gpu_ns <= n.gpu_ns, "{}", n.path);
    }
    let resnet = node(&tree, "ResNet_0");
    assert!(
        resnet.gpu_ns as f64 > 0.9 * tree.gpu_ns as f64,
        "most GPU work inside the model"
    );
    assert!(
        resnet.backward_gpu_ns as f64 > 0.4 * resnet.gpu_ns as f64,
        "backward kernels counted for the model: {} of {}",
        resnet.backward_gpu_ns,
        resnet.gpu_ns
    );
    // The CLI prints the same tree.
    let out = Command::new(env!("CARGO_BIN_EXE_ttap"))
        .args(["modules", path.to_str().unwrap(), "--depth", "1"])
        .output()
        .expect("ttap runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("  ResNet_0\n") && text.contains("    Sequential_0\n"),
        "{text}"
    );
    println!("{text}");
}

#[test]
fn the_holder_of_events_is_the_deepest_frame_with_more_than_half_their_time() {
    let t = ingest_bytes(TRACE.as_bytes(), IngestOptions::default())
        .expect("ingests")
        .trace;
    let frames = Frames::of(&t).expect("module frames");
    let kernels = |names: &[&str]| -> Vec<usize> {
        (0..t.events.len())
            .filter(|&i| names.contains(&t.name_of(i)) && t.events.kind[i].is_gpu_work())
            .collect()
    };
    let holder = |names: &[&str]| frames.holder(&t, &kernels(names));
    // Forward and backward GEMMs: Linear_0 ran both.
    assert_eq!(
        holder(&["gemm", "gemm_backward"]).as_deref(),
        Some("Net_0/Linear_0")
    );
    // 10 + 7 + 5 µs over three children, none with half: their parent.
    assert_eq!(
        holder(&["gemm", "head_kernel", "relu"]).as_deref(),
        Some("Net_0")
    );
    // 5 of 8 µs in ReLU_0, 3 outside every frame.
    assert_eq!(holder(&["relu", "stray"]).as_deref(), Some("Net_0/ReLU_0"));
    // A record_function label is crossed, not named: its module is the one around it.
    assert_eq!(holder(&["head_kernel"]).as_deref(), Some("Net_0"));
    // Outside every frame: no module.
    assert_eq!(holder(&["stray"]), None);
    assert_eq!(holder(&[]), None);
    // A CPU op counts where it runs.
    let relu_op: Vec<usize> = (0..t.events.len())
        .filter(|&i| t.name_of(i) == "aten::relu")
        .collect();
    assert_eq!(frames.holder(&t, &relu_op).as_deref(), Some("Net_0/ReLU_0"));
}

/// `trace` (Kineto JSON) with module frames added on each thread that launched one of
/// `kernels` (model event indices of `t`, the same trace ingested): `nn.Module: Net_0` over
/// each step's top-level operators there, and inside it `nn.Module: Backbone_0` from the first
/// to the last top-level operator that launched one of them.
fn with_frames(
    trace: &str,
    t: &torchtraceap::model::Trace,
    a: &Analysis<'_>,
    kernels: &[usize],
) -> String {
    use torchtraceap::model::NONE;
    let e = &t.events;
    let top = |mut i: usize| {
        while e.parent[i] != NONE {
            i = e.parent[i] as usize;
        }
        i
    };
    let launchers: Vec<usize> = kernels
        .iter()
        .filter_map(|&k| t.launch_of(k as u32))
        .map(|l| top(l as usize))
        .collect();
    let mut v: serde_json::Value = serde_json::from_str(trace).unwrap();
    let mut threads: Vec<u32> = launchers.iter().map(|&i| e.track[i]).collect();
    threads.sort_unstable();
    threads.dedup();
    let mut added = Vec::new();
    for thread in threads {
        // The thread's pid and tid in the JSON: those of one of its operators.
        let op = *launchers.iter().find(|&&i| e.track[i] == thread).unwrap();
        let json_op = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| {
                x["name"] == t.name_of(op)
                    && (x["ts"].as_f64().unwrap_or(0.0) * 1000.0).round() as i64 == e.start[op]
            })
            .expect("the operator in the JSON");
        let (pid, tid) = (json_op["pid"].clone(), json_op["tid"].clone());
        let frame = |name: &str, start: i64, end: i64| {
            serde_json::json!({"ph": "X", "cat": "python_function", "name": format!("nn.Module: {name}"),
                "pid": pid, "tid": tid, "ts": start as f64 / 1000.0, "dur": (end - start) as f64 / 1000.0})
        };
        for k in 0..a.steps.steps.len() {
            let (start, end) = a.range(k);
            let here =
                |i: &usize| e.track[*i] == thread && e.start[*i] >= start && e.start[*i] < end;
            let ops: Vec<usize> = (0..e.len())
                .filter(|i| e.parent[*i] == NONE && here(i))
                .collect();
            let mine: Vec<usize> = launchers.iter().copied().filter(here).collect();
            let span = |list: &[usize]| {
                let first = list.iter().map(|&i| e.start[i]).min()?;
                Some((first, list.iter().map(|&i| e.end(i)).max()?))
            };
            if let Some((first, last)) = span(&ops) {
                added.push(frame("Net_0", first - 1000, last + 1000));
            }
            if let Some((first, last)) = span(&mine) {
                added.push(frame("Backbone_0", first, last));
            }
        }
    }
    let events = v["traceEvents"].as_array_mut().unwrap();
    for (k, f) in added.into_iter().enumerate() {
        events.insert(k, f);
    }
    v.to_string()
}

#[test]
fn findings_name_their_module_only_where_the_trace_has_module_frames() {
    let g = generate(&Config {
        model: Model::ResNet50,
        gpu: Gpu::A100,
        training: true,
        steps: 6,
        batch: 64,
        seed: 5,
        injections: (1..6)
            .flat_map(|step| {
                [AntiPattern::Fp32Simt, AntiPattern::DataLoader].map(|pattern| Injection {
                    pattern,
                    step,
                    severity: 0.8,
                })
            })
            .collect(),
        noise: false,
    });
    let plain = ingest_bytes(g.trace.as_bytes(), IngestOptions::default())
        .unwrap()
        .trace;
    let a = Analysis::new(&plain);
    let found = detect::run(&a).findings;
    let simt = found
        .iter()
        .find(|f| f.id == "fp32-without-tensor-cores")
        .expect("the injected SIMT kernels are found");
    assert!(found.iter().any(|f| f.id == "dataloader-bottleneck"));
    assert!(
        found.iter().all(|f| f.module.is_none()),
        "no frames, no module"
    );
    let kernels: Vec<usize> = simt
        .evidence
        .iter()
        .flat_map(|e| e.sources.clone())
        .collect();
    assert!(!kernels.is_empty());
    let framed_json = with_frames(&g.trace, &plain, &a, &kernels);
    let framed = ingest_bytes(framed_json.as_bytes(), IngestOptions::default())
        .unwrap()
        .trace;
    let a = Analysis::new(&framed);
    let found = detect::run(&a).findings;
    let module = |id: &str| {
        found
            .iter()
            .find(|f| f.id == id)
            .unwrap_or_else(|| panic!("{id} still found"))
            .module
            .clone()
    };
    assert_eq!(
        module("fp32-without-tensor-cores").as_deref(),
        Some("Net_0/Backbone_0")
    );
    // DataLoader ranges are not kernels or ops of the model: no module.
    assert_eq!(module("dataloader-bottleneck"), None);
    // In the report, its Markdown and a link.
    let report = Report::new(&a, &detect::run(&a));
    let entry = report
        .findings
        .iter()
        .find(|f| f.id == "fp32-without-tensor-cores")
        .unwrap();
    assert_eq!(entry.module.as_deref(), Some("Net_0/Backbone_0"));
    assert!(report
        .to_markdown("t")
        .contains("- Module: `Net_0/Backbone_0`."));
    let shared = share::SharedReport::new(report, share::fingerprint(&framed));
    let link = share::encode(&shared, &share::ShareOptions::default()).unwrap();
    let back = share::decode(&link.fragment).unwrap();
    let entry = back
        .report
        .findings
        .iter()
        .find(|f| f.id == "fp32-without-tensor-cores")
        .unwrap();
    assert_eq!(entry.module.as_deref(), Some("Net_0/Backbone_0"));
}
