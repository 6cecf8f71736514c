//! Per-module attribution (`modules`, `ttap modules`): on a trace written in the test, each
//! kernel counts for the module (or `record_function` label) enclosing the op that launched it,
//! backward kernels for the module that ran forward, and work outside every frame apart; on a
//! real ResNet-18 training trace the tree is consistent (a node holds at least its children's
//! GPU time, the top level and the outside add up to all GPU work) and backward is attributed.

mod common;

use std::process::Command;

use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::modules::{ModuleNode, ModuleTree};

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
