//! The shapes of captures nobody tuned for (issue 41), written here as loops of PyTorch's own
//! events: host syncs and `.cpu()` readbacks in loops without `ProfilerStep`, fp32 GEMMs on SIMT
//! cores under `xmma` names, a capture dominated by its cold start, a capture whose GPU record
//! ends early, a compiled model's compilation (issue 38), GPU records that start before their
//! launch (clock skew); and, found before this file was
//! written (kept as guards), pageable copies in one long capture, PyTorch 1.8's per-parameter
//! SGD and a single-process DataLoader on the CPU; layout conversions around convolutions on the
//! CPU. Each has a positive trace and the nearest healthy one.

// Only `shared_traces` of it: `trace_files` serves the tests that read every trace.
#[allow(dead_code)]
mod common;
mod kineto;
mod notes;

use notes::{expect_no_note, expect_note};
use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect::{self, Detected};

const PID: i64 = 4410;
const STREAM: i64 = 7;
const MM: &str = "ampere_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn";
const RELU: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)";

/// A capture written event by event, times in µs: `gpu` is where the stream's last work ends.
#[derive(Default)]
struct Capture {
    events: Vec<String>,
    correlation: u64,
    gpu: i64,
}

impl Capture {
    /// A host range (op, annotation) on the main thread.
    fn range(&mut self, cat: &str, name: &str, ts: i64, dur: i64) {
        self.events
            .push(kineto::complete(cat, name, (PID, PID), (ts, dur), ""));
    }

    /// A runtime call over `(ts, dur)` that queues `(cat, name)` for `gpu_us` on the stream,
    /// no earlier than 5 µs after the call starts.
    fn queue(&mut self, call: &str, (ts, dur): (i64, i64), (cat, name): (&str, &str), gpu_us: i64) {
        self.correlation += 1;
        let corr = self.correlation;
        self.events.push(kineto::complete(
            "cuda_runtime",
            call,
            (PID, PID),
            (ts, dur),
            &format!(r#""correlation": {corr}"#),
        ));
        let start = self.gpu.max(ts + 5);
        let bytes = if cat == "gpu_memcpy" {
            format!(r#", "bytes": {}"#, gpu_us * 12_000)
        } else {
            String::new()
        };
        self.events.push(kineto::complete(
            cat,
            name,
            (0, STREAM),
            (start, gpu_us),
            &format!(r#""correlation": {corr}, "device": 0, "stream": {STREAM}{bytes}"#),
        ));
        self.gpu = start + gpu_us;
    }

    /// An op over `(ts, dur)` launching kernel `name` of `gpu_us` from its middle.
    fn op(&mut self, op: &str, (ts, dur): (i64, i64), name: &str, gpu_us: i64) {
        self.range("cpu_op", op, ts, dur);
        self.queue(
            "cudaLaunchKernel",
            (ts + 2, dur - 4),
            ("kernel", name),
            gpu_us,
        );
    }

    /// A host call that returns when the stream has drained (at least `min_us` long).
    fn synchronize(&mut self, call: &str, ts: i64, min_us: i64) -> i64 {
        let end = (self.gpu + 3).max(ts + min_us);
        self.correlation += 1;
        self.events.push(kineto::complete(
            "cuda_runtime",
            call,
            (PID, PID),
            (ts, end - ts),
            &format!(r#""correlation": {}"#, self.correlation),
        ));
        end
    }

    fn json(&self, device: (&str, i64)) -> String {
        kineto::document(
            &[kineto::device(0, device.0, device.1, 85_899_345_920)],
            "",
            &self.events,
            "untuned",
        )
    }
}

fn detected(json: &str) -> Detected {
    let trace = ingest_bytes(json.as_bytes(), IngestOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .trace;
    detect::run(&Analysis::new(&trace))
}

fn fired(found: &Detected) -> Vec<String> {
    found
        .findings
        .iter()
        .map(|f| format!("{} ({:.1}%)", f.id, f.impact.pct_of_step))
        .collect()
}

fn has(found: &Detected, id: &str) -> bool {
    found.findings.iter().any(|f| f.id == id)
}

/// `id` must be among the findings of the trace `positive.0` (because of `positive.1`), and not
/// among those of `negative.0` (because of `negative.1`).
fn found_only_in(id: &str, positive: (&str, &str), negative: (&str, &str)) {
    let found = detected(positive.0);
    assert!(has(&found, id), "{id}: {}: {:?}", positive.1, fired(&found));
    let found = detected(negative.0);
    assert!(
        !has(&found, id),
        "{id}: {}: {:?}",
        negative.1,
        fired(&found)
    );
}

const A100: (&str, i64) = ("NVIDIA A100-SXM4-80GB", 8);
const TO_PAGEABLE: &str = "Memcpy DtoH (Device -> Pageable)";
const TO_PINNED: &str = "Memcpy DtoH (Device -> Pinned)";
const FROM_PAGEABLE: &str = "Memcpy HtoD (Pageable -> Device)";
const FROM_PINNED: &str = "Memcpy HtoD (Pinned -> Device)";

/// An inference loop without `ProfilerStep`: each of `n` iterations runs a GEMM and a ReLU and,
/// where `sync` names one, waits for them with it; 60 µs of Python follow before the next.
fn inference_loop(n: i64, sync: Option<&str>) -> String {
    let mut c = Capture::default();
    let mut t = 1_000;
    for _ in 0..n {
        c.range("user_annotation", "forward", t, 50);
        c.op("aten::mm", (t + 1, 24), MM, 140);
        c.op("aten::relu", (t + 26, 20), RELU, 30);
        t += 52;
        if let Some(call) = sync {
            t = c.synchronize(call, t, 4);
        }
        t += 60;
    }
    c.json(A100)
}

#[test]
fn a_sync_per_iteration_of_a_loop_without_profiler_steps_is_found() {
    found_only_in(
        "host-device-sync",
        (
            &inference_loop(101, Some("cudaDeviceSynchronize")),
            "101 cudaDeviceSynchronize, one per iteration, drain the GPU",
        ),
        (&inference_loop(101, None), "no sync, no finding"),
    );
}

/// `json` with every GPU record moved `by_us` earlier: a GPU clock that runs ahead of the host's.
fn gpu_clock_ahead(json: &str, by_us: i64) -> String {
    let mut doc: serde_json::Value = serde_json::from_str(json).expect("the capture's JSON");
    for e in doc["traceEvents"].as_array_mut().expect("events") {
        if e["cat"] == "kernel" {
            e["ts"] = (e["ts"].as_i64().expect("a time") - by_us).into();
        }
    }
    doc.to_string()
}

#[test]
fn gpu_records_that_start_before_their_launch_say_the_clocks_disagree() {
    // A loop that waits for its kernels: each starts 5 µs into its launch call, then 150 µs
    // earlier on a clock that runs ahead.
    let synced = inference_loop(101, Some("cudaDeviceSynchronize"));
    let skewed = detected(&gpu_clock_ahead(&synced, 150));
    let note = expect_note(skewed, "clock-skew");
    assert!(
        note.text
            .contains("202 of 202 GPU records start before the host call that launched them"),
        "{}",
        note.text
    );
    expect_no_note(&detected(&synced), "clock-skew");
}

/// `.cpu()` of a result: `cudaMemcpyAsync` into pageable memory, which returns only when the copy
/// (and everything queued before it) is done.
fn readback_loop(n: i64, readback: &str) -> String {
    let mut c = Capture::default();
    let mut t = 1_000;
    for _ in 0..n {
        c.op("aten::mm", (t, 24), MM, 300);
        c.op("aten::relu", (t + 25, 20), RELU, 30);
        c.range("cpu_op", "aten::to", t + 47, 10);
        let host = if readback.contains("Pageable") {
            // The call returns once the GPU has run everything queued and the copy.
            c.gpu + 8 - (t + 48)
        } else {
            6
        };
        c.queue(
            "cudaMemcpyAsync",
            (t + 48, host),
            ("gpu_memcpy", readback),
            4,
        );
        t += 48 + host + 80;
    }
    c.json(A100)
}

#[test]
fn a_copy_into_pageable_memory_blocks_the_host_like_a_sync() {
    let (pageable, pinned) = (readback_loop(50, TO_PAGEABLE), readback_loop(50, TO_PINNED));
    let waits = "each .cpu() waits for the GPU";
    found_only_in(
        "host-device-sync",
        (&pageable, waits),
        (&pinned, "pinned: no wait"),
    );
}

/// fp32 GEMMs as cuBLAS names them on Ampere: `xmma` kernels on SIMT cores (`ffma`) or on tensor
/// cores (`tf32`, `tensor16x8x8`), each 200 µs per iteration beside 100 µs of ReLU.
fn gemm_loop(gemm: &str) -> String {
    let mut c = Capture::default();
    let mut t = 1_000;
    for _ in 0..40 {
        c.op("aten::mm", (t, 20), gemm, 200);
        c.op("aten::relu", (t + 21, 20), RELU, 100);
        t = c.gpu - 20;
    }
    c.json(A100)
}

#[test]
fn xmma_gemms_on_simt_cores_are_fp32_without_tensor_cores() {
    let ffma = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas";
    let tf32 = "sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_execute_kernel__5x_cublas";
    found_only_in(
        "fp32-without-tensor-cores",
        (&gemm_loop(ffma), "ffma xmma GEMMs run on SIMT cores"),
        (&gemm_loop(tf32), "TF32 xmma GEMMs run on tensor cores"),
    );
}

const WORKERS: &str = "_MultiProcessingDataLoaderIter";
const SOFTMAX: &str = "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*, float const*, int, int, int, bool const*, int, bool)";
const DIV: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >, at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >, at::detail::Array<char*, 3>)";
const BMM: &str = "ampere_sgemm_128x64_tn";

/// An inference capture without steps: the first batch of a DataLoader (`iterator`), taking
/// `first_batch_ms` (worker start-up when long and multiprocessing), then one forward pass of 12
/// layers whose attention is written by hand (`matmul` → `bmm`, `/ sqrt(d)`, `softmax`, `matmul`
/// → `bmm`) between two 300 ms projections.
fn cold_vit(iterator: &str, first_batch_ms: i64) -> String {
    let mut c = Capture::default();
    let next = format!("enumerate(DataLoader)#{iterator}.__next__");
    c.range("user_annotation", &next, 1_000, first_batch_ms * 1_000);
    let mut t = 1_100 + first_batch_ms * 1_000;
    for _ in 0..12 {
        c.op("aten::linear", (t, 30), MM, 300_000);
        c.range("cpu_op", "aten::matmul", t + 31, 30);
        c.op("aten::bmm", (t + 32, 28), BMM, 1_000);
        c.op("aten::div", (t + 62, 20), DIV, 500);
        c.op("aten::softmax", (t + 83, 20), SOFTMAX, 2_000);
        c.range("cpu_op", "aten::matmul", t + 104, 30);
        c.op("aten::bmm", (t + 105, 28), BMM, 1_000);
        c.op("aten::linear", (t + 135, 30), MM, 300_000);
        t = c.gpu - 100;
    }
    c.json(A100)
}

#[test]
fn a_capture_dominated_by_its_cold_start_is_read_from_its_first_launch() {
    // 4.5 s of DataLoader start-up, then 7.25 s of forward pass: the attention blocks claim
    // 12 × (2 + 0.5 + 1) ms = 42 ms, 0.36% of the whole capture and 0.58% of its steady part (a
    // finding must cost 0.5% of the step).
    let found = detected(&cold_vit(WORKERS, 4_500));
    assert!(
        has(&found, "unfused-attention"),
        "hand-written attention in the steady part: {:?}",
        fired(&found)
    );
    assert!(
        !has(&found, "dataloader-bottleneck"),
        "the first batch's worker start-up is no steady DataLoader wait: {:?}",
        fired(&found)
    );
    let note = expect_note(found, "cold-start");
    assert!(note.text.contains("4500.1 ms"), "{}", note.text);
    expect_no_note(&detected(&cold_vit(WORKERS, 20)), "cold-start");
    // A single-process DataLoader starts no workers: its first batch is the workload's.
    let single = detected(&cold_vit("_SingleProcessDataLoaderIter", 4_500));
    assert!(
        has(&single, "dataloader-bottleneck"),
        "{:?}",
        fired(&single)
    );
    expect_no_note(&single, "cold-start");
}

const SGD_ADD: &str = "void at::native::unrolled_elementwise_kernel<at::native::AddFunctor<float>, at::detail::Array<char*, 3>, OffsetCalculator<2, unsigned int>, OffsetCalculator<1, unsigned int>, at::native::memory::LoadWithoutCast, at::native::memory::StoreWithoutCast>(int, at::native::AddFunctor<float>, at::detail::Array<char*, 3>, OffsetCalculator<2, unsigned int>, OffsetCalculator<1, unsigned int>, at::native::memory::LoadWithoutCast, at::native::memory::StoreWithoutCast)";

/// Training in PyTorch 1.8's words (`Operator`, `Runtime`, `Kernel` categories), without
/// `ProfilerStep`: 6 iterations of a forward GEMM, its backward, then `SGD.step` updating each of
/// `params` parameters with its own `aten::add_` (one kernel each), then `zero_grad`.
fn sgd_1_8(params: i64) -> String {
    let mut c = Capture::default();
    let mut t = 1_000;
    for _ in 0..6 {
        c.op("aten::linear", (t, 30), MM, 2_000);
        c.range(
            "cpu_op",
            "autograd::engine::evaluate_function: AddmmBackward",
            t + 40,
            60,
        );
        c.op("aten::mm", (t + 45, 50), MM, 4_000);
        t += 110;
        c.range("cpu_op", "Optimizer.step#SGD.step", t, params * 12 + 10);
        for p in 0..params {
            c.op("aten::add_", (t + 5 + p * 12, 10), SGD_ADD, 3);
        }
        t += params * 12 + 20;
        c.range("cpu_op", "Optimizer.zero_grad#SGD.zero_grad", t, 30);
        t = c.gpu.max(t + 40) + 200;
    }
    [
        ("cpu_op", "Operator"),
        ("cuda_runtime", "Runtime"),
        ("kernel", "Kernel"),
    ]
    .iter()
    .fold(c.json(("Tesla V100-SXM2-16GB", 7)), |text, (new, old)| {
        text.replace(&format!(r#""cat": "{new}""#), &format!(r#""cat": "{old}""#))
    })
}

#[test]
fn pytorch_1_8s_per_parameter_sgd_is_an_unfused_optimizer() {
    found_only_in(
        "optimizer-not-fused",
        (&sgd_1_8(120), "120 add_ kernels per SGD.step"),
        (&sgd_1_8(8), "8 parameters"),
    );
}

/// A data-pipeline experiment without `ProfilerStep`: `iterations` batches, each 20 ms in the
/// DataLoader, then copied to the GPU (`copy`, 350 µs for 4.2 MB) and normalised by one kernel.
fn pipeline(iterations: i64, copy: &str) -> String {
    let mut c = Capture::default();
    let mut t = 1_000;
    for _ in 0..iterations {
        c.range(
            "user_annotation",
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            t,
            20_000,
        );
        t += 20_010;
        c.range("cpu_op", "aten::to", t, 370);
        let host = if copy.contains("Pageable") { 360 } else { 8 };
        c.queue("cudaMemcpyAsync", (t + 2, host), ("gpu_memcpy", copy), 350);
        c.op("aten::sub", (t + 380, 20), RELU, 40);
        t += 420;
    }
    c.json(A100)
}

#[test]
fn pageable_copies_in_one_long_capture_are_found() {
    let (pageable, pinned) = (pipeline(40, FROM_PAGEABLE), pipeline(40, FROM_PINNED));
    let batches = "4.2 MB from pageable memory per batch";
    found_only_in(
        "pageable-memcpy",
        (&pageable, batches),
        (&pinned, "pinned batches"),
    );
}

/// CPU-only training without `ProfilerStep`: 10 iterations, each `loading_ms` in a
/// single-process DataLoader, then a convolution's forward and backward and an SGD step.
fn cpu_training(loading_ms: i64) -> String {
    let mut c = Capture::default();
    let mut t = 1_000;
    for _ in 0..10 {
        c.range(
            "user_annotation",
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            t,
            loading_ms * 1_000,
        );
        t += loading_ms * 1_000 + 10;
        c.range("cpu_op", "aten::conv2d", t, 10_000);
        c.range("cpu_op", "aten::mkldnn_convolution", t + 5, 9_990);
        t += 10_010;
        c.range(
            "cpu_op",
            "autograd::engine::evaluate_function: ConvolutionBackward0",
            t,
            12_000,
        );
        t += 12_010;
        c.range("cpu_op", "Optimizer.step#SGD.step", t, 1_000);
        t += 1_100;
    }
    kineto::document(&[], "", &c.events, "untuned")
}

#[test]
fn a_single_process_dataloader_on_the_cpu_is_a_bottleneck() {
    found_only_in(
        "dataloader-bottleneck",
        (
            &cpu_training(8),
            "8 ms of a 31 ms iteration in the DataLoader",
        ),
        (&cpu_training(0), "a DataLoader that returns at once"),
    );
}

/// CPU-only inference in `ProfilerStep`s: 6 steps of 4 convolutions (2 ms each, oneDNN), each
/// input passed through `convert` first (`(op, Concrete Inputs, µs)`): the conversion op, with
/// the copy it makes nested in it.
fn cpu_convolutions(convert: (&str, &str, i64)) -> String {
    let (op, inputs, convert_us) = convert;
    let mut c = Capture::default();
    let mut t = 1_000;
    for step in 0..6 {
        let start = t;
        t += 20;
        for _ in 0..4 {
            c.events.push(kineto::complete(
                "cpu_op",
                op,
                (PID, PID),
                (t, convert_us),
                &format!(r#""Input Dims": [[8, 64, 56, 56], []], "Concrete Inputs": {inputs}"#),
            ));
            c.range("cpu_op", "aten::clone", t + 5, convert_us - 10);
            t += convert_us + 10;
            c.range("cpu_op", "aten::conv2d", t, 2_000);
            c.range("cpu_op", "aten::mkldnn_convolution", t + 5, 1_990);
            t += 2_010;
        }
        c.range(
            "user_annotation",
            &format!("ProfilerStep#{step}"),
            start,
            t - start + 20,
        );
        t += 40;
    }
    kineto::document(&[], "", &c.events, "untuned")
}

#[test]
fn layout_conversions_around_convolutions_on_the_cpu_are_found() {
    found_only_in(
        "layout-transforms",
        (
            &cpu_convolutions(("aten::contiguous", r#"["", "2"]"#, 300)),
            "each convolution's input made channels_last first (1.2 ms of a 9.3 ms step)",
        ),
        (
            &cpu_convolutions(("aten::contiguous", r#"["", "0"]"#, 300)),
            "inputs made contiguous in the default format, as autograd does",
        ),
    );
    found_only_in(
        "layout-transforms",
        (
            &cpu_convolutions(("aten::to_dense", r#"["", ""]"#, 300)),
            "each convolution's input converted out of MKL-DNN's blocked layout",
        ),
        (
            &cpu_convolutions(("aten::to_dense", r#"["", ""]"#, 20)),
            "conversions that take 1% of the convolutions' time",
        ),
    );
}

const TO_NHWC: &str = "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnn::dnn::kernel_class)2>(cudnn::ops::nchw2nhwc_params_t<float>, float const*, float*)";
const CONV: &str = "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_kernel";

/// Two `ProfilerStep`s of 1 ms, each converting to NHWC (10 µs), convolving (2 × 250 µs) and
/// converting a second tensor (where `truncated`, 23 µs). Where `truncated`, the capture's GPU
/// record ends after the second step's first convolution: the launches after it have none.
fn short_steps(truncated: bool) -> String {
    let mut c = Capture::default();
    for (k, t) in [(1, 1_000), (2, 2_000)] {
        c.range("user_annotation", &format!("ProfilerStep#{k}"), t, 1_000);
        let second = if truncated && k == 2 { 23 } else { 10 };
        c.op("aten::contiguous", (t + 10, 20), TO_NHWC, second);
        c.op("aten::cudnn_convolution", (t + 40, 20), CONV, 250);
        if truncated && k == 2 {
            // Launched, never recorded.
            for (n, ts) in [(1, t + 70), (2, t + 100)] {
                c.events.push(kineto::complete(
                    "cuda_runtime",
                    "cudaLaunchKernel",
                    (PID, PID),
                    (ts, 16),
                    &format!(r#""correlation": {}"#, 1_000 + n),
                ));
            }
        } else {
            c.op("aten::cudnn_convolution", (t + 70, 20), CONV, 250);
            c.op("aten::contiguous", (t + 100, 20), TO_NHWC, 10);
        }
    }
    c.json(A100)
}

#[test]
fn a_step_whose_gpu_record_ends_early_is_no_steady_step() {
    let found = detected(&short_steps(true));
    assert!(
        !has(&found, "layout-transforms"),
        "the second step's kernels are not all recorded: {:?}",
        fired(&found)
    );
    let whole = Analysis::new(
        &ingest_bytes(short_steps(false).as_bytes(), IngestOptions::default())
            .unwrap_or_else(|e| panic!("{e}"))
            .trace,
    )
    .steady
    .len();
    assert_eq!(whole, 2, "both steps are recorded whole");
}

const TRITON: &str = "triton_poi_fused_add_mul_0";

/// A compiled model's capture without `ProfilerStep`: `compile_ms` of Dynamo compiling (its
/// `(dynamo_timed)` ranges, pad_mm's benchmark launching 2 GEMMs), then 20 calls of the compiled
/// region, each launching a 2 ms Triton kernel (the host waits for the GPU); the first call takes
/// `first_call_ms` more on the host before its launch.
fn compiled_capture(compile_ms: i64, first_call_ms: i64) -> String {
    let mut c = Capture::default();
    let mut t = 1_000;
    if compile_ms > 0 {
        let compile = "_compile.compile_inner (dynamo_timed)";
        c.range("user_annotation", compile, t, compile_ms * 1_000);
        c.range(
            "user_annotation",
            "pad_mm_benchmark (dynamo_timed)",
            t + 1_000,
            200_000,
        );
        c.op("aten::mm", (t + 2_000, 40), MM, 50);
        c.op("aten::mm", (t + 150_000, 40), MM, 50);
        t += compile_ms * 1_000 + 1_000;
    }
    for k in 0..20 {
        let host = if k == 0 { first_call_ms * 1_000 } else { 0 };
        c.range("cpu_op", "Torch-Compiled Region: 0/0", t, host + 100);
        c.op(TRITON, (t + host + 10, 60), TRITON, 2_000);
        t = c.gpu - 100;
    }
    c.json(A100)
}

#[test]
fn compilation_and_autotuning_are_left_out_of_the_steady_state() {
    // 900 ms of compiling before 40 ms of a GPU-bound compiled model: without it set apart, the
    // GPU idles 96% of the capture.
    let found = detected(&compiled_capture(900, 0));
    assert!(found.findings.is_empty(), "{:?}", fired(&found));
    let note = expect_note(found.clone(), "compile-time");
    assert!(
        note.text.contains("900.0 ms of compilation and autotuning in 1 range (the longest: _compile.compile_inner (dynamo_timed) at 0.000 ms (900.000 ms)), launching 2 kernels (0.100 ms of GPU time"),
        "{}",
        note.text
    );
    assert!(
        note.text.contains("in step 0's cold start"),
        "{}",
        note.text
    );
    expect_note(found, "cold-start");
    // A compiled region whose first call spends 600 ms on the host (compiling, unrecorded).
    let found = detected(&compiled_capture(0, 600));
    assert!(found.findings.is_empty(), "{:?}", fired(&found));
    let note = expect_note(found, "compile-time");
    assert!(
        note.text
            .contains("(the longest: Torch-Compiled Region: 0/0 at 0.000 ms (600.100 ms))"),
        "{}",
        note.text
    );
    // Already compiled: nothing to set apart.
    let found = detected(&compiled_capture(0, 0));
    expect_no_note(&found, "compile-time");
    expect_no_note(&found, "cold-start");
}

#[test]
fn a_step_that_recompiles_is_warm_up() {
    // 4 profiler steps of 10 GEMMs; the third recompiles for 50 ms first.
    let mut c = Capture::default();
    let mut t = 1_000;
    for step in 1..=4 {
        let start = t;
        if step == 3 {
            c.range(
                "user_annotation",
                "_compile.compile_inner (dynamo_timed)",
                t,
                50_000,
            );
            t += 50_000;
        }
        for _ in 0..10 {
            c.op("aten::mm", (t, 40), MM, 1_000);
            t = c.gpu - 100;
        }
        t = c.gpu + 10;
        c.range(
            "user_annotation",
            &format!("ProfilerStep#{step}"),
            start,
            t - start,
        );
        t += 10;
    }
    let trace = ingest_bytes(c.json(A100).as_bytes(), IngestOptions::default())
        .expect("a trace")
        .trace;
    let a = Analysis::new(&trace);
    let warm: Vec<i64> = a
        .steps
        .steps
        .iter()
        .filter(|s| s.warmup)
        .map(|s| s.number)
        .collect();
    assert_eq!(warm, [3]);
    let note = expect_note(detect::run(&a), "compile-time");
    assert!(
        note.text.contains("50.0 ms in warm-up step 3"),
        "{}",
        note.text
    );
}

#[test]
fn a_real_compiled_convs_compilation_is_left_out() {
    // CS521 MP2's Inductor capture: 959 ms of Dynamo and Inductor compiling (pad_mm's benchmark
    // launches 2 fills), then the compiled conv and the reference one. Without it set apart the
    // GPU idled 97% of the capture (gpu-low-utilization, 942 ms per step).
    let Some(dir) = common::shared_traces("the real compiled capture's compile time") else {
        return;
    };
    let path = dir.join("Aryan-Bahl__CS521-mp2/gpu__traces__myconv_inductor_trace.json");
    let bytes = std::fs::read(&path).expect("readable");
    let trace = ingest_bytes(&bytes, IngestOptions::default())
        .expect("a trace")
        .trace;
    let found = detect::run(&Analysis::new(&trace));
    let note = expect_note(found.clone(), "compile-time");
    assert!(
        note.text
            .contains("(the longest: _compile.compile_inner (dynamo_timed)")
            && note.text.contains("launching 2 kernels"),
        "{}",
        note.text
    );
    assert!(
        found.findings.iter().all(|f| f.impact.ms_per_step < 200.0),
        "{:?}",
        fired(&found)
    );
}
