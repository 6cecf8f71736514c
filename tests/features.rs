//! Window features: on a real trace (every window, finite values, the fp32 SIMT kernels of a
//! V100 ResNet-50 visible), and on a generated one (the injected window stands out).

// Only `shared_traces` of it: `trace_files` serves the tests that read every trace.
#[allow(dead_code)]
mod common;

use torchtraceap::ingest::{ingest_bytes, ingest_reader, IngestOptions};
use torchtraceap::internals::features::{of_trace, NAMES};
use torchtraceap::internals::window::{split, Phase};
use torchtraceap_dev::synth::{generate, AntiPattern, Config, Gpu, Injection, Model, FIRST_STEP};

fn feature(name: &str) -> usize {
    NAMES.iter().position(|n| *n == name).unwrap()
}

#[test]
fn every_window_of_a_real_trace_gets_finite_features() {
    let Some(dir) = common::shared_traces("every_window_of_a_real_trace_gets_finite_features")
    else {
        return;
    };
    let path = dir.join("facebookresearch__HolisticTraceAnalysis/tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| {
        panic!(
            "{} is listed in the shared traces' catalogue: {e}",
            path.display()
        )
    });
    let t = ingest_reader(file, IngestOptions::default(), 1 << 20, |_| {})
        .unwrap()
        .trace;
    let steps = split(&t);
    let rows = of_trace(&t, &steps);
    assert_eq!(rows.len(), steps.windows().count());
    assert!(rows
        .iter()
        .all(|r| r.values.len() == NAMES.len() && r.values.iter().all(|v| v.is_finite())));
    // ResNet-50 on a V100 without autocast: fp32 GEMMs and convolutions run on SIMT cores in the
    // forward and backward windows (49% of kernel time over the trace).
    let simt = feature("simt_fp32_kernel_share");
    let heavy: Vec<f32> = rows
        .iter()
        .filter(|r| matches!(r.phase, Phase::Forward | Phase::Backward))
        .map(|r| r.values[simt])
        .collect();
    assert!(
        !heavy.is_empty() && heavy.iter().all(|&s| s > 0.2),
        "{heavy:?}"
    );
    // The GPU is busy in the backward windows (98% over the trace), one per step at least.
    let busy = feature("gpu_busy");
    let backward: Vec<f32> = rows
        .iter()
        .filter(|r| r.phase == Phase::Backward)
        .map(|r| r.values[busy])
        .collect();
    assert!(
        backward.len() >= steps.steps.len() && backward.iter().all(|&b| b > 0.8),
        "{backward:?}"
    );
}

#[test]
fn the_injected_window_stands_out_in_its_features() {
    let injections = vec![Injection {
        pattern: AntiPattern::DataLoader,
        step: 3,
        severity: 0.8,
    }];
    let c = Config {
        model: Model::ResNet50,
        gpu: Gpu::A100,
        training: true,
        steps: 6,
        batch: 64,
        seed: 3,
        injections,
        noise: false,
    };
    let t = ingest_bytes(generate(&c).trace.as_bytes(), IngestOptions::default())
        .unwrap()
        .trace;
    let steps = split(&t);
    let rows = of_trace(&t, &steps);
    let busy = feature("gpu_busy");
    let loading: Vec<(i64, f32)> = rows
        .iter()
        .filter(|r| r.phase == Phase::DataLoading)
        .map(|r| (r.step, r.values[busy]))
        .collect();
    // In the injected step the GPU has finished the previous step and idles while the batch
    // loads; elsewhere it is still busy with the previous step's work.
    assert_eq!(
        loading.len(),
        6,
        "one DataLoader window per step: {loading:?}"
    );
    assert!(loading.iter().any(|(step, _)| *step == FIRST_STEP + 3));
    for (step, b) in loading.iter().skip(1) {
        if *step == FIRST_STEP + 3 {
            assert!(*b < 0.1, "step {step}: busy {b}");
        } else {
            assert!(*b > 0.9, "step {step}: busy {b}");
        }
    }
}

#[test]
fn a_window_owns_the_gpu_work_its_cpu_work_launched() {
    // A GPU-bound training step: the optimizer window's CPU launches three fused-SGD kernels
    // while the GPU still runs the backward; its own GPU work is those three kernels only.
    let c = Config {
        model: Model::ResNet50,
        gpu: Gpu::A100,
        training: true,
        steps: 4,
        batch: 64,
        seed: 5,
        injections: Vec::new(),
        noise: false,
    };
    let t = ingest_bytes(generate(&c).trace.as_bytes(), IngestOptions::default())
        .unwrap()
        .trace;
    let steps = split(&t);
    let optimizer: Vec<&torchtraceap::internals::window::Window> = steps
        .windows()
        .filter(|w| w.phase == Phase::Optimizer)
        .collect();
    assert_eq!(optimizer.len(), 4);
    for w in optimizer {
        let own: Vec<u32> = steps.launched_in(w).collect();
        assert_eq!(own.len(), 3);
        assert!(own
            .iter()
            .all(|&g| t.name_of(g as usize).contains("multi_tensor_apply_kernel")));
    }
    // Every launched kernel belongs to exactly one window.
    let owned: usize = steps.windows().map(|w| steps.launched_in(w).count()).sum();
    assert_eq!(owned, t.launches.len());
}
