//! The op-level detectors on small Kineto traces written here: layout transforms around
//! convolutions, unfused attention, heavy copies, the unfused optimizer, `zero_grad` writing
//! zeros, fusion candidates and `torch.compile` graph breaks. For each, a positive trace whose
//! impact is checked against the arithmetic of the trace (in the comments), and the nearest
//! healthy trace, which must not trigger it.
//!
//! Every trace has four `ProfilerStep#N` ranges of 10 ms (so none is warm-up) unless a test says
//! otherwise; impacts are per steady-state step, percentages of those 10 ms.

mod kineto;
mod notes;

use notes::{expect_no_note, expect_note};

use torchtraceap::ingest::{ingest_bytes, IngestOptions};
use torchtraceap::internals::analysis::Analysis;
use torchtraceap::internals::detect::{self, Detected, Finding, Severity, DETECTORS};
use torchtraceap::report::Report;

// ---------------------------------------------------------------------------------------------
// Kernel names, as PyTorch 2.x on an A100 records them.

const GEMM: &str = "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn";
const ADD: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::Half>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::Half>, at::detail::Array<char*, 3>)";
const MUL: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::Half, c10::Half, c10::Half, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<c10::Half, c10::Half, c10::Half, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3>)";
const GELU: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::Half)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::Half)#1}, at::detail::Array<char*, 2>)";
const FILL: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)";
const TO_NHWC: &str = "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnn::dnn::kernel_class)2>(cudnn::ops::nchw2nhwc_params_t<float>, float const*, float*)";
const TO_NCHW: &str = "void cudnn::ops::nhwcToNchwKernel<float, float, float, true, false, (cudnn::dnn::kernel_class)0>(cudnn::ops::nhwc2nchw_params_t<float>, float const*, float*)";
const IMPLICIT_SGEMM: &str = "void cudnn::cnn::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)";
const SCUDNN: &str = "ampere_scudnn_128x64_relu_medium_nn_v1";
/// The convolution cuDNN picks for channels_last tensors: no conversion around it.
const NHWC_FPROP: &str = "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_kernel";
const SOFTMAX: &str = "void (anonymous namespace)::softmax_warp_forward<c10::Half, c10::Half, float, 10, false, false>(c10::Half*, c10::Half const*, int, int, int, bool const*, int, bool)";
const FLASH: &str = "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::half_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::half_t> >, false, false, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)";
const MULTI_TENSOR: &str = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float)";
const FUSED_ADAM: &str = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)0, false>, float*, double, double, double, double, double, bool, float*, float*>(at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)0, false>, float*, double, double, double, double, double, bool, float*, float*)";
const LAYER_NORM: &str = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float>(int, float, c10::Half const*, c10::Half const*, c10::Half const*, float*, float*, c10::Half*)";
const DTOD: &str = "Memcpy DtoD (Device -> Device)";
const HTOD_PINNED: &str = "Memcpy HtoD (Pinned -> Device)";

// ---------------------------------------------------------------------------------------------
// The trace builder.

/// Steady-state step length, µs.
const STEP_US: i64 = 10_000;
/// Four steps of equal length: none is warm-up.
const STEADY: [i64; 4] = [STEP_US; 4];
/// The Python main thread (Kineto's pid is the main thread's tid) and autograd's thread.
const PID: i64 = 3120;
const MAIN: i64 = 3120;
const AUTOGRAD: i64 = 3187;
/// The compute stream of GPU 0.
const STREAM: i64 = 7;
/// One `cudaLaunchKernel` (or `cudaMemcpyAsync`) call, µs.
const LAUNCH_US: i64 = 4;

/// A Kineto trace written event by event, times in µs. Two cursors move as events are added:
/// `cpu`, where the next range or runtime call starts on the current thread, and `gpu`, where the
/// stream's last work ended. Ranges nest: each opens 1 µs before its first child and closes
/// 1 µs after its last; a runtime call takes `LAUNCH_US` and the next event starts 1 µs later.
/// GPU work starts `gap` µs after the stream's previous work, or 1 µs after its launch call
/// ended if the CPU is behind (in every trace here but the optimizer's, the CPU is ahead, so
/// the gaps on the stream are exactly the ones given).
struct Kineto {
    events: Vec<String>,
    correlation: u64,
    tid: i64,
    cpu: i64,
    gpu: i64,
    /// Start of the step being written.
    step: i64,
}

impl Kineto {
    /// A trace of back-to-back `ProfilerStep#1…` ranges of the given lengths; `body` writes the
    /// inside of step `k` (0-based), with both cursors at the step's start.
    fn trace(steps: &[i64], body: impl Fn(&mut Kineto, usize)) -> String {
        let mut b = Kineto {
            events: Vec::new(),
            correlation: 0,
            tid: MAIN,
            cpu: 0,
            gpu: 0,
            step: 0,
        };
        let mut start = 1_000_000; // like a real trace's clock
        for (k, &dur) in steps.iter().enumerate() {
            (b.step, b.cpu, b.gpu, b.tid) = (start, start + 1, start, MAIN);
            body(&mut b, k);
            assert!(
                b.cpu <= start + dur && b.gpu <= start + dur,
                "step {k} overflows: cpu {} gpu {}",
                b.cpu - start,
                b.gpu - start
            );
            let name = format!("ProfilerStep#{}", k + 1);
            b.event("user_annotation", &name, (PID, MAIN), (start, dur), "");
            start += dur;
        }
        let a100 = kineto::device(0, "NVIDIA A100-SXM4-80GB", 8, 85_899_345_920);
        kineto::document(&[a100], "", &b.events, "op_patterns.pt.trace.json")
    }

    /// One complete event at `(pid, tid)` over `(ts, dur)`; `args` is the inside of its `args`.
    fn event(&mut self, cat: &str, name: &str, at: (i64, i64), span: (i64, i64), args: &str) {
        self.events
            .push(kineto::complete(cat, name, at, span, args));
    }

    /// Moves the CPU cursor to `offset` µs after the step's start.
    fn at(&mut self, offset: i64) {
        assert!(
            self.cpu <= self.step + offset,
            "the CPU is already past {offset}"
        );
        self.cpu = self.step + offset;
    }

    /// Python time between ops.
    fn pause(&mut self, us: i64) {
        self.cpu += us;
    }

    /// Further CPU events go to thread `tid`.
    fn thread(&mut self, tid: i64) {
        self.tid = tid;
    }

    /// A range of category `cat` around what `inside` writes; `args` is the inside of its
    /// `args` (`"Input Dims": …`), or empty.
    fn range(&mut self, (cat, args): (&str, &str), name: &str, inside: impl FnOnce(&mut Kineto)) {
        let start = self.cpu;
        self.cpu += 1;
        inside(self);
        let end = self.cpu + 1;
        self.event(cat, name, (PID, self.tid), (start, end - start), args);
        self.cpu = end + 1;
    }

    /// A `record_function` range (`nn.Module: …`, `Optimizer.step#…`).
    fn annotation(&mut self, name: &str, inside: impl FnOnce(&mut Kineto)) {
        self.range(("user_annotation", ""), name, inside);
    }

    /// A chain of nested ATen ops, outermost first, around what `inside` writes.
    fn ops(&mut self, names: &[&str], inside: impl FnOnce(&mut Kineto)) {
        match names.split_first() {
            None => inside(self),
            Some((first, rest)) => self.range(("cpu_op", ""), first, |b| b.ops(rest, inside)),
        }
    }

    /// An op that launches one kernel.
    fn op_kernel(&mut self, op: &str, kernel: &str, gap: i64, dur: i64) {
        self.ops(&[op], |b| b.kernel(kernel, gap, dur));
    }

    /// A runtime call at the CPU cursor and the GPU work it queues on the stream, linked by
    /// correlation id; `args` adds to the GPU event's arguments.
    fn gpu_work(&mut self, call: &str, cat: &str, name: &str, gap: i64, dur: i64, args: &str) {
        self.correlation += 1;
        let corr = self.correlation;
        let runtime = if call.starts_with("cu") && !call.starts_with("cuda") {
            "cuda_driver"
        } else {
            "cuda_runtime"
        };
        let (cpu, tid) = (self.cpu, self.tid);
        let link = format!(r#""correlation": {corr}"#);
        self.event(runtime, call, (PID, tid), (cpu, LAUNCH_US), &link);
        let start = (self.gpu + gap).max(cpu + LAUNCH_US + 1);
        let args = format!(r#"{link}, "device": 0, "stream": {STREAM}{args}"#);
        self.event(cat, name, (0, STREAM), (start, dur), &args);
        self.gpu = start + dur;
        self.cpu = cpu + LAUNCH_US + 1;
    }

    /// `cudaLaunchKernel` and its kernel.
    fn kernel(&mut self, name: &str, gap: i64, dur: i64) {
        self.gpu_work("cudaLaunchKernel", "kernel", name, gap, dur, "");
    }

    /// `cudaMemcpyAsync` and its copy of `bytes`.
    fn memcpy(&mut self, name: &str, gap: i64, dur: i64, bytes: u64) {
        let args = format!(r#", "bytes": {bytes}"#);
        self.gpu_work("cudaMemcpyAsync", "gpu_memcpy", name, gap, dur, &args);
    }
}

// ---------------------------------------------------------------------------------------------
// Running the detectors.

/// Every finding on the trace; the steady-state steps must be the 10 ms ones.
fn findings(text: &str) -> Vec<Finding> {
    detected(text).findings
}

/// The findings and notes on the trace; the steady-state steps must be the 10 ms ones.
fn detected(text: &str) -> Detected {
    let ingested =
        ingest_bytes(text.as_bytes(), IngestOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        ingested.report.warnings.is_empty(),
        "{:?}",
        ingested.report.warnings
    );
    let analysis = Analysis::new(&ingested.trace);
    let step_ms = analysis.step_ns() / 1e6;
    assert!(
        (step_ms - STEP_US as f64 / 1000.0).abs() < 1e-9,
        "steady steps of {step_ms} ms"
    );
    detect::run(&analysis)
}

fn known(id: &str) {
    assert!(
        DETECTORS.iter().any(|d| d.id() == id),
        "{id} is no detector"
    );
}

/// The finding `id` must be there, with this impact (ms per step, and its share of the 10 ms
/// step) and severity.
fn expect(text: &str, id: &str, ms_per_step: f64, severity: Severity) -> Finding {
    known(id);
    let found = findings(text);
    let f = found
        .iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| {
            let ids: Vec<&str> = found.iter().map(|f| f.id).collect();
            panic!("{id} not found; found {ids:?}")
        })
        .clone();
    let pct = 100.0 * ms_per_step / (STEP_US as f64 / 1000.0);
    assert!(
        (f.impact.ms_per_step - ms_per_step).abs() < 1e-6,
        "{id}: {} ms per step, expected {ms_per_step} ({})",
        f.impact.ms_per_step,
        f.summary
    );
    assert!(
        (f.impact.pct_of_step - pct).abs() < 1e-6,
        "{id}: {}% of the step, expected {pct}",
        f.impact.pct_of_step
    );
    assert_eq!(f.severity, severity, "{id}: {}", f.summary);
    f
}

/// The finding `id` must not be there.
fn expect_none(text: &str, id: &str) {
    known(id);
    if let Some(f) = findings(text).iter().find(|f| f.id == id) {
        panic!(
            "{id} must not fire: {} ({} ms per step, {:?})",
            f.summary, f.impact.ms_per_step, f.severity
        );
    }
}

/// The count of the finding's first evidence.
fn count(f: &Finding) -> Option<u64> {
    f.evidence.first().and_then(|e| e.count)
}

// ---------------------------------------------------------------------------------------------
// layout-transforms

/// One convolution layer as cuDNN runs it: the op chain down to `aten::cudnn_convolution`, which
/// launches an NCHW→NHWC conversion (when `to_nhwc` > 0), the convolution, and a conversion back
/// (when `to_nchw` > 0), 2 µs apart on the stream.
fn conv_layer(b: &mut Kineto, to_nhwc: i64, conv: (&str, i64), to_nchw: i64) {
    let chain = [
        "aten::conv2d",
        "aten::convolution",
        "aten::_convolution",
        "aten::cudnn_convolution",
    ];
    b.ops(&chain, |b| {
        if to_nhwc > 0 {
            b.kernel(TO_NHWC, 2, to_nhwc);
        }
        b.kernel(conv.0, 2, conv.1);
        if to_nchw > 0 {
            b.kernel(TO_NCHW, 2, to_nchw);
        }
    });
}

#[test]
fn layout_conversions_around_convolutions() {
    // An fp32 NCHW model whose convolutions cuDNN runs in NHWC: each of 4 layers converts its
    // input (150 µs), convolves (600 µs) and converts back (150 µs). Layout kernels per step:
    // 4 × (150 + 150) = 1 200 µs = 1.2 ms = 12% of the step (≥ 1%), 50% of the 2 400 µs of
    // convolutions (≥ 5%), in every steady step: medium.
    let text = Kineto::trace(&STEADY, |b, _| {
        b.annotation("nn.Module: ResNet_0", |b| {
            for conv in [IMPLICIT_SGEMM, SCUDNN, IMPLICIT_SGEMM, SCUDNN] {
                conv_layer(b, 150, (conv, 600), 150);
            }
        });
    });
    let f = expect(&text, "layout-transforms", 1.2, Severity::Medium);
    // 8 conversions per step in 4 steps.
    assert_eq!(count(&f), Some(32));
    assert!(
        f.summary
            .contains("8.0 layout conversions per step take 1.20 ms (12.0% of the step)"),
        "{}",
        f.summary
    );
    assert_eq!((f.gate.held_steps, f.gate.steady_steps), (4, 4));
}

#[test]
fn channels_last_convolutions_need_no_conversion() {
    // The same model in channels_last: cuDNN's NHWC convolutions, nothing around them.
    let text = Kineto::trace(&STEADY, |b, _| {
        b.annotation("nn.Module: ResNet_0", |b| {
            for _ in 0..4 {
                conv_layer(b, 0, (NHWC_FPROP, 600), 0);
            }
        });
    });
    expect_none(&text, "layout-transforms");
}

#[test]
fn one_input_conversion_is_under_5_percent_of_convolution_time() {
    // channels_last model fed an NCHW batch: one 200 µs conversion per step before 4
    // convolutions of 2 000 µs. 200 µs is 2% of the step (above the 1% floor) but 200 / 8 000 =
    // 2.5% of the convolution time, under 5%.
    let text = Kineto::trace(&STEADY, |b, _| {
        b.annotation("nn.Module: ResNet_0", |b| {
            conv_layer(b, 200, (NHWC_FPROP, 2_000), 0);
            for _ in 0..3 {
                conv_layer(b, 0, (NHWC_FPROP, 2_000), 0);
            }
        });
    });
    expect_none(&text, "layout-transforms");
}

// ---------------------------------------------------------------------------------------------
// unfused-attention

/// One attention block of a ViT in fp16: the QKV projection, attention (hand-written
/// `q @ k.T / sqrt(d)`, softmax, `@ v`, or `scaled_dot_product_attention` with the flash
/// kernel), the output projection.
fn attention_block(b: &mut Kineto, layer: usize, fused: bool) {
    b.annotation(&format!("nn.Module: Attention_{layer}"), |b| {
        b.ops(&["aten::linear", "aten::addmm"], |b| b.kernel(GEMM, 2, 200));
        if fused {
            let sdpa = [
                "aten::scaled_dot_product_attention",
                "aten::_scaled_dot_product_flash_attention",
                "aten::_flash_attention_forward",
            ];
            b.ops(&sdpa, |b| b.kernel(FLASH, 2, 350));
        } else {
            b.op_kernel("aten::bmm", GEMM, 2, 120);
            b.op_kernel("aten::div", MUL, 2, 40);
            b.ops(&["aten::softmax", "aten::_softmax"], |b| {
                b.kernel(SOFTMAX, 2, 300)
            });
            b.op_kernel("aten::bmm", GEMM, 2, 120);
        }
        b.ops(&["aten::linear", "aten::addmm"], |b| b.kernel(GEMM, 2, 100));
    });
}

fn vit(fused: bool) -> String {
    Kineto::trace(&STEADY, |b, _| {
        for layer in 0..2 {
            attention_block(b, layer, fused);
        }
    })
}

#[test]
fn attention_as_bmm_softmax_bmm() {
    // 2 attention blocks per step, each bmm → div → softmax → bmm under its
    // `nn.Module: Attention_N`: a block claims its scale and softmax (40 + 300 µs) and half of
    // its two bmms (120 + 120 µs): 2 × (340 + 120) = 920 µs = 0.92 ms = 9.2% of the step: medium.
    let f = expect(&vit(false), "unfused-attention", 0.92, Severity::Medium);
    // 2 blocks per step in 4 steps.
    assert_eq!(count(&f), Some(8));
}

#[test]
fn scaled_dot_product_attention_is_fused() {
    expect_none(&vit(true), "unfused-attention");
}

/// A Python frame (`with_stack`/`with_modules`): `nn.Module: Name_N`.
fn module(b: &mut Kineto, name: &str, inside: impl FnOnce(&mut Kineto)) {
    b.range(
        ("python_function", ""),
        &format!("nn.Module: {name}"),
        inside,
    );
}

/// One Swin window attention, as its code writes it: the QKV projection, `q * scale`,
/// `q @ k.transpose(-2, -1)`, the relative-position bias (`table[index].view().permute()
/// .contiguous().unsqueeze(0)`, added), the window mask (`view`, `unsqueeze`, added, `view`),
/// `nn.Softmax` (its own module frame), `attn_drop` (eval: no kernel), `@ v`, the projection.
fn swin_block(b: &mut Kineto, layer: usize) {
    module(b, &format!("SwinBlock_{layer}"), |b| {
        module(b, "WindowAttention_0", |b| {
            b.ops(&["aten::linear", "aten::addmm"], |b| b.kernel(GEMM, 2, 200));
            b.op_kernel("aten::mul", MUL, 2, 20);
            b.op_kernel("aten::matmul", GEMM, 2, 120);
            b.op_kernel("aten::index", ADD, 2, 10);
            for view in ["aten::view", "aten::view", "aten::permute"] {
                b.ops(&[view], |_| {});
            }
            b.op_kernel("aten::contiguous", ADD, 2, 10);
            b.ops(&["aten::unsqueeze"], |_| {});
            b.op_kernel("aten::add", ADD, 2, 20);
            b.ops(&["aten::view"], |_| {});
            b.ops(&["aten::unsqueeze"], |_| {});
            b.op_kernel("aten::add", ADD, 2, 20);
            b.ops(&["aten::view"], |_| {});
            module(b, "Softmax_0", |b| {
                b.ops(&["aten::softmax", "aten::_softmax"], |b| {
                    b.kernel(SOFTMAX, 2, 300)
                });
            });
            module(b, "Dropout_0", |b| b.ops(&["aten::dropout"], |_| {}));
            b.op_kernel("aten::matmul", GEMM, 2, 120);
            b.ops(&["aten::linear", "aten::addmm"], |b| b.kernel(GEMM, 2, 100));
        });
    });
}

#[test]
fn swin_attention_with_bias_and_mask_between_the_gemms() {
    // 2 blocks per step, 11 ops between the score GEMM and the softmax, the softmax and the
    // dropout in their own module frames. A block claims what lies between its GEMMs (index 10,
    // contiguous 10, two adds 20 + 20, softmax 300 µs) and half of its GEMMs (120 + 120 µs):
    // 2 × (360 + 120) = 960 µs = 0.96 ms.
    let text = Kineto::trace(&STEADY, |b, _| {
        for layer in 0..2 {
            swin_block(b, layer);
        }
    });
    let f = expect(&text, "unfused-attention", 0.96, Severity::Medium);
    assert_eq!(count(&f), Some(8));
    // Block 0 runs from its score GEMM to block 1's: 600 µs of attention (120 + 360 + 120) in
    // 920 (with the projection 100, the next QKV 200 and scale 20): 65%. Block 1, the last,
    // spans as many ops, cut at the step's end: 600 of 700 µs, 86%.
    assert!(
        f.summary.contains(
            "attention is 86% of the GPU time of block 1 (SwinBlock_1/WindowAttention_0), 65–86% across the 2 blocks"
        ),
        "{}",
        f.summary
    );
    let shares = &f.evidence[1].events;
    assert_eq!(
        shares,
        &[
            "block 0 (SwinBlock_0/WindowAttention_0): attention 65% of 0.920 ms",
            "block 1 (SwinBlock_1/WindowAttention_0): attention 86% of 0.700 ms"
        ]
    );
}

/// A GEMM op, a softmax over an input of `dims` (an `Input Dims` list), a GEMM op; `between`
/// writes what comes between the first GEMM and the softmax.
fn gemm_softmax_gemm(dims: &str, between: impl Fn(&mut Kineto)) -> String {
    let args = format!(r#""Input Dims": {dims}"#);
    Kineto::trace(&STEADY, |b, _| {
        for _ in 0..2 {
            b.op_kernel("aten::matmul", GEMM, 2, 120);
            between(b);
            b.range(("cpu_op", &args), "aten::softmax", |b| {
                b.kernel(SOFTMAX, 2, 300)
            });
            b.op_kernel("aten::matmul", GEMM, 2, 120);
        }
    })
}

#[test]
fn a_softmax_over_two_dimensions_is_no_attention() {
    // A classifier's (or a router's) softmax over [batch, classes] between two matmuls.
    expect_none(
        &gemm_softmax_gemm("[[32, 1000]]", |_| {}),
        "unfused-attention",
    );
    // The same over [batch, heads, queries, keys] is attention: 2 × (300 + 120) µs.
    let attention = gemm_softmax_gemm("[[32, 12, 197, 197]]", |_| {});
    expect(&attention, "unfused-attention", 0.84, Severity::Medium);
}

#[test]
fn a_norm_between_a_gemm_and_a_softmax_is_no_attention() {
    let text = gemm_softmax_gemm("[[32, 12, 197, 197]]", |b| {
        b.op_kernel("aten::layer_norm", LAYER_NORM, 2, 20)
    });
    expect_none(&text, "unfused-attention");
}

#[test]
fn attention_from_kernel_names_alone() {
    // No CPU op: kernels launched straight from Python (a custom extension, a compiled graph).
    // ROCm's GEMM, a scale, a mask fill, a bias add, the softmax, the GEMM: 4 kernels before
    // the softmax. A block claims 40 + 10 + 20 + 300 µs and half of 120 + 120 µs: 490 µs; an MLP
    // (GEMM, GELU, GEMM) beside it is no attention. 2 × 490 µs = 0.98 ms.
    const ROCM_GEMM: &str = "Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1";
    let text = Kineto::trace(&STEADY, |b, _| {
        for _ in 0..2 {
            b.kernel(ROCM_GEMM, 2, 120);
            b.kernel(MUL, 2, 40);
            b.kernel(FILL, 2, 10);
            b.kernel(ADD, 2, 20);
            b.kernel(SOFTMAX, 2, 300);
            b.kernel(ROCM_GEMM, 2, 120);
            b.kernel(GEMM, 2, 200);
            b.kernel(GELU, 2, 50);
            b.kernel(GEMM, 2, 200);
        }
    });
    let f = expect(&text, "unfused-attention", 0.98, Severity::Medium);
    assert!(
        f.summary.contains("seen in the kernel sequence"),
        "{}",
        f.summary
    );
}

/// Hand-written attention on the CPU, each op's range lasting as given, called through `outer`
/// (empty: none), its softmax the op `softmax`.
fn host_attention(outer: &[&str], softmax: &str) -> String {
    let host_op = |b: &mut Kineto, name: &str, us: i64| b.ops(&[name], |b| b.pause(us - 2));
    Kineto::trace(&STEADY, |b, _| {
        for _ in 0..2 {
            b.ops(outer, |b| {
                host_op(b, "aten::matmul", 400);
                host_op(b, "aten::div", 50);
                host_op(b, "aten::masked_fill", 60);
                host_op(b, softmax, 200);
                host_op(b, "aten::dropout", 30);
                host_op(b, "aten::matmul", 400);
            });
        }
    })
}

#[test]
fn attention_on_a_cpu_only_trace_claims_host_time() {
    // No GPU activity. A block claims the scale, mask, softmax and dropout (50 + 60 + 200 +
    // 30 µs) and half of its two matmuls (400 + 400 µs): 740 µs; 2 blocks: 1.48 ms.
    let text = host_attention(&[], "aten::softmax");
    let f = expect(&text, "unfused-attention", 1.48, Severity::Medium);
    assert!(f.summary.contains("of the host time"), "{}", f.summary);
}

#[test]
fn scaled_dot_product_attention_dispatched_to_its_math_fallback_is_unfused() {
    // On a CPU (or with inputs the fused backends refuse) SDPA runs PyTorch's math: the blocks
    // of the test above, 1.48 ms.
    let sdpa = [
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_attention_math",
    ];
    expect(
        &host_attention(&sdpa, "aten::_safe_softmax"),
        "unfused-attention",
        1.48,
        Severity::Medium,
    );
}

#[test]
fn scaled_dot_product_attention_dispatched_to_a_fused_backend_is_fused() {
    let sdpa = [
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention_for_cpu",
    ];
    expect_none(
        &host_attention(&sdpa, "aten::_safe_softmax"),
        "unfused-attention",
    );
}

// attention-hot-spot (a note)

fn vit_blocks(blocks: usize) -> String {
    Kineto::trace(&STEADY, |b, _| {
        for layer in 0..blocks {
            attention_block(b, layer, true);
        }
    })
}

#[test]
fn attention_above_a_fifth_of_the_step_is_noted_as_the_hot_spot() {
    // 4 fused blocks per step, each launching 200 + 350 + 100 µs under its
    // `nn.Module: Attention_N` (the SDPA ops inside it are not counted again): 2.6 ms = 26%.
    let note = expect_note(detected(&vit_blocks(4)), "attention-hot-spot");
    assert!(
        note.text.contains("2.60 ms")
            && note.text.contains("26%")
            && note.text.contains("16 blocks"),
        "{}",
        note.text
    );
}

#[test]
fn attention_under_a_fifth_of_the_step_is_no_hot_spot() {
    // 3 blocks: 1.95 ms = 19.5%, under the 20% mark.
    expect_no_note(&detected(&vit_blocks(3)), "attention-hot-spot");
}

// ---------------------------------------------------------------------------------------------
// heavy-memcpy

/// A step that copies its input batch to the GPU (100 µs, pinned, 24 GB/s) and runs `layers`
/// GEMMs of 300 µs, each followed by a `.contiguous()` device-to-device copy of `dtod_us`
/// (700 GB/s).
fn copying_step(b: &mut Kineto, layers: usize, dtod_us: i64) {
    let to = ["aten::to", "aten::_to_copy", "aten::copy_"];
    b.ops(&to, |b| b.memcpy(HTOD_PINNED, 2, 100, 2_400_000));
    b.annotation("nn.Module: Net_0", |b| {
        for _ in 0..layers {
            b.ops(&["aten::linear", "aten::addmm"], |b| b.kernel(GEMM, 2, 300));
            let contiguous = ["aten::contiguous", "aten::clone", "aten::copy_"];
            let bytes = dtod_us as u64 * 700_000;
            b.ops(&contiguous, |b| b.memcpy(DTOD, 2, dtod_us, bytes));
        }
    });
}

#[test]
fn device_to_device_copies_above_5_percent() {
    // Per step: 4 DtoD copies of 200 µs (800 µs) and the 100 µs input copy: 900 µs of copies,
    // 9% ≥ 5%. Impact: the DtoD time plus half the host copy time = 800 + 100 / 2 = 850 µs =
    // 0.85 ms = 8.5% of the step: medium.
    let text = Kineto::trace(&STEADY, |b, _| copying_step(b, 4, 200));
    let f = expect(&text, "heavy-memcpy", 0.85, Severity::Medium);
    // 5 copies per step in 4 steps.
    assert_eq!(count(&f), Some(20));
    assert!(
        f.summary.contains("a median 9.0% of the step (5 per step)"),
        "{}",
        f.summary
    );
}

#[test]
fn copies_under_5_percent_are_fine() {
    // 4 × 95 + 100 = 480 µs of copies per step: 4.8%.
    let text = Kineto::trace(&STEADY, |b, _| copying_step(b, 4, 95));
    expect_none(&text, "heavy-memcpy");
}

#[test]
fn copies_of_the_warm_up_step_are_left_out() {
    // Step 1 takes 15 ms (1.5× the others: warm-up) and copies 20 × 200 + 100 = 4 100 µs; the
    // steady steps copy 480 µs (4.8%). Counting step 1 would make it (4 100 + 3 × 480) / 4 =
    // 1 385 µs of a mean 11.25 ms step, 12%.
    let text = Kineto::trace(&[15_000, STEP_US, STEP_US, STEP_US], |b, k| {
        if k == 0 {
            copying_step(b, 20, 200);
        } else {
            copying_step(b, 4, 95);
        }
    });
    expect_none(&text, "heavy-memcpy");
}

// ---------------------------------------------------------------------------------------------
// optimizer-not-fused and zero-grad-memset

/// Parameters of the model: 4 linear layers, weight and bias.
const PARAMS: usize = 8;

#[derive(Clone, Copy)]
enum Adam {
    /// `foreach=False`: one kernel per op per parameter.
    SingleTensor,
    /// `foreach=True` on a model large enough for 8 chunks of tensors per foreach op.
    Foreach,
    /// `fused=True`.
    Fused,
}

/// A training step: `zero_grad` (writing zeros with `aten::zero_` when `memset`, else
/// `set_to_none`: no GPU work), the forward pass (4 GEMMs of 200 µs), the backward pass on
/// autograd's thread (8 GEMMs of 200 µs), and `Adam.step` from 7 000 µs to the end of the step.
fn training_step(b: &mut Kineto, adam: Adam, memset: bool) {
    b.annotation("Optimizer.zero_grad#Adam.zero_grad", |b| {
        if memset {
            for _ in 0..PARAMS {
                b.ops(&["aten::zero_", "aten::fill_"], |b| b.kernel(FILL, 2, 25));
            }
        }
    });
    b.annotation("nn.Module: MLP_0", |b| {
        for _ in 0..4 {
            b.ops(&["aten::linear", "aten::addmm"], |b| b.kernel(GEMM, 2, 200));
        }
    });
    b.thread(AUTOGRAD);
    for _ in 0..4 {
        let backward = [
            "autograd::engine::evaluate_function: AddmmBackward0",
            "AddmmBackward0",
            "aten::mm",
        ];
        b.ops(&backward, |b| {
            b.kernel(GEMM, 2, 200);
            b.kernel(GEMM, 2, 200);
        });
    }
    b.thread(MAIN);
    assert!(
        b.gpu < b.step + 7_000,
        "the backward reaches into the optimizer"
    );
    b.at(7_000);
    b.annotation("Optimizer.step#Adam.step", |b| match adam {
        Adam::SingleTensor => {
            for _ in 0..PARAMS {
                for op in [
                    "aten::lerp_",
                    "aten::mul_",
                    "aten::addcmul_",
                    "aten::sqrt",
                    "aten::div",
                    "aten::add_",
                    "aten::addcdiv_",
                ] {
                    b.op_kernel(op, MUL, 2, 5);
                    b.pause(10);
                }
            }
        }
        Adam::Foreach => {
            for op in [
                "aten::_foreach_lerp_",
                "aten::_foreach_mul_",
                "aten::_foreach_addcmul_",
                "aten::_foreach_sqrt",
                "aten::_foreach_div_",
                "aten::_foreach_add_",
                "aten::_foreach_addcdiv_",
            ] {
                b.ops(&[op], |b| {
                    (0..8).for_each(|_| b.kernel(MULTI_TENSOR, 2, 30))
                });
            }
        }
        Adam::Fused => {
            b.ops(&["aten::_fused_adam_"], |b| {
                (0..8).for_each(|_| b.kernel(FUSED_ADAM, 2, 40))
            });
        }
    });
}

fn training(adam: Adam, memset: bool) -> String {
    Kineto::trace(&STEADY, |b, _| training_step(b, adam, memset))
}

#[test]
fn single_tensor_adam_launches_a_kernel_per_op_per_parameter() {
    // Adam.step: 7 ops × 8 parameters = 56 kernels of 5 µs (≥ 50), no _foreach_ or _fused_ op.
    // Its range opens at 7 000 µs and spans 1 + 56 × 18 + 1 = 1 010 µs (each op: 1 µs to open,
    // a 4 µs launch and 1 µs after it, 1 µs to close, 1 µs after, 10 µs of Python); the GPU
    // is busy 56 × 5 = 280 µs of it. Impact: the GPU idle inside the range, 1 010 - 280 =
    // 730 µs, plus half the GPU time of its own kernels, 140 µs: 0.87 ms = 8.7%: medium.
    let f = expect(
        &training(Adam::SingleTensor, false),
        "optimizer-not-fused",
        0.87,
        Severity::Medium,
    );
    assert_eq!(count(&f), Some(56));
    // 56 kernels against the gate of 50 (margin 1.12) in every step: 1 × (0.5 + 0.5 × 0.12).
    assert_eq!(f.confidence, 0.56);
}

#[test]
fn foreach_adam_is_not_flagged_even_with_56_kernels() {
    // 7 foreach ops × 8 chunks = 56 multi_tensor_apply kernels: as many as above, but foreach.
    expect_none(&training(Adam::Foreach, false), "optimizer-not-fused");
}

#[test]
fn fused_adam_is_not_flagged() {
    expect_none(&training(Adam::Fused, false), "optimizer-not-fused");
}

#[test]
fn a_capture_without_steps_starting_inside_the_optimizer_step() {
    // One `Optimizer.step` recorded alone, no ProfilerStep: the step runs from the first launch
    // (inside the range) to the last kernel. The single-tensor Adam of the test above: its first
    // launch at 7 002 µs, its last kernel ends at 8 002 µs, a step of 1 000 µs of which the GPU
    // is busy 56 × 5 = 280 µs. Impact: the 720 µs of idle, plus half the kernels' 280 µs:
    // 0.86 ms, 86% of the step.
    let text = Kineto::trace(&[STEP_US], |b, _| {
        b.at(7_000);
        b.annotation("Optimizer.step#Adam.step", |b| {
            for _ in 0..PARAMS * 7 {
                b.op_kernel("aten::mul_", MUL, 2, 5);
                b.pause(10);
            }
        });
    })
    .replace("ProfilerStep#1", "training loop");
    let ingested =
        ingest_bytes(text.as_bytes(), IngestOptions::default()).expect("the trace reads");
    let found = detect::run(&Analysis::new(&ingested.trace)).findings;
    let f = found
        .iter()
        .find(|f| f.id == "optimizer-not-fused")
        .unwrap_or_else(|| panic!("no optimizer-not-fused in {found:?}"));
    assert!(
        (f.impact.ms_per_step - 0.86).abs() < 1e-6,
        "{}",
        f.impact.ms_per_step
    );
    assert!(
        (f.impact.pct_of_step - 86.0).abs() < 1e-6,
        "{}",
        f.impact.pct_of_step
    );
    assert_eq!(count(f), Some(56));
}

#[test]
fn zero_grad_writing_zeros() {
    // zero_grad(set_to_none=False): aten::zero_ → aten::fill_ launches a 25 µs fill kernel per
    // parameter: 8 × 25 = 200 µs. The range spans 1…91 µs of the step (8 op chains of 11 µs);
    // the GPU idles inside it 1…9 (before the first fill starts, 1 µs after its launch ends)
    // and 2 µs between the first four fills (the GPU runs behind the host): 8 + 3 × 2 = 14 µs.
    // 214 µs = 0.214 ms = 2.14% of the step: low.
    let f = expect(
        &training(Adam::Fused, true),
        "zero-grad-memset",
        0.214,
        Severity::Low,
    );
    // 8 launches per step in 4 steps.
    assert_eq!(count(&f), Some(32));
}

#[test]
fn zero_grad_set_to_none_launches_nothing() {
    expect_none(&training(Adam::Fused, false), "zero-grad-memset");
}

// ---------------------------------------------------------------------------------------------
// fusion-candidates

/// Element-wise ops of an MLP block in eager mode: bias add, GELU, dropout scale, residual add.
const ELEMENTWISE: [(&str, &str); 5] = [
    ("aten::add", ADD),
    ("aten::gelu", GELU),
    ("aten::mul", MUL),
    ("aten::add", ADD),
    ("aten::mul", MUL),
];

/// `blocks` MLP blocks: a GEMM of `gemm_us` 3 µs after the previous work, then element-wise
/// kernels of the `chain` durations, the first 3 µs after the GEMM and the others `gap` µs apart.
/// With `split`, a GEMM runs before every element-wise kernel instead (3 µs before it).
fn mlp_step(b: &mut Kineto, blocks: usize, gemm_us: i64, chain: &[i64], gap: i64, split: bool) {
    b.annotation("nn.Module: MLP_0", |b| {
        for _ in 0..blocks {
            for (j, &dur) in chain.iter().enumerate() {
                if j == 0 || split {
                    b.ops(&["aten::linear", "aten::addmm"], |b| {
                        b.kernel(GEMM, 3, gemm_us)
                    });
                }
                let (op, kernel) = ELEMENTWISE[j % ELEMENTWISE.len()];
                let gap = if j == 0 || split { 3 } else { gap };
                b.op_kernel(op, kernel, gap, dur);
            }
        }
    });
}

/// Five element-wise kernels, 65 µs in all, the longest 18 µs.
const CHAIN: [i64; 5] = [12, 18, 9, 15, 11];

#[test]
fn chains_of_short_elementwise_kernels() {
    // 10 blocks per step, each a GEMM of 300 µs then 5 element-wise kernels (12, 18, 9, 15,
    // 11 µs) 3 µs apart: 10 runs of 65 µs = 650 µs of the step's 3,650 µs of kernels (17.8% ≥
    // 10%). Each run spans 65 + 4 × 3 = 77 µs,
    // of which a fused kernel keeps the longest (18 µs): 59 µs saved per run, 590 µs per step
    // = 0.59 ms = 5.9%: medium.
    let text = Kineto::trace(&STEADY, |b, _| mlp_step(b, 10, 300, &CHAIN, 3, false));
    let f = expect(&text, "fusion-candidates", 0.59, Severity::Medium);
    // 10 runs per step in 4 steps.
    assert_eq!(count(&f), Some(40));
}

#[test]
fn four_kernels_of_19_us_10_us_apart_are_a_chain() {
    // At the thresholds: 7 blocks of 4 kernels of 19 µs (under 20) 10 µs apart (at most 10):
    // 7 × 76 = 532 µs of the step's 2,632 µs of kernels (20.2%). Each run spans 76 + 3 × 10 =
    // 106 µs, minus the
    // longest 19 µs: 87 µs saved, 7 × 87 = 609 µs = 0.609 ms = 6.09%: medium.
    let text = Kineto::trace(&STEADY, |b, _| mlp_step(b, 7, 300, &[19; 4], 10, false));
    let f = expect(&text, "fusion-candidates", 0.609, Severity::Medium);
    assert_eq!(count(&f), Some(28));
}

#[test]
fn elementwise_kernels_between_gemms_are_no_chain() {
    // The same 650 µs of element-wise kernels per step, each after a 60 µs GEMM.
    let text = Kineto::trace(&STEADY, |b, _| mlp_step(b, 10, 60, &CHAIN, 3, true));
    expect_none(&text, "fusion-candidates");
}

#[test]
fn three_kernels_in_a_row_are_no_chain() {
    // 14 blocks of 3 kernels (12, 18, 9 µs) 3 µs apart: 14 × 39 = 546 µs per step (5.46% ≥ 5%),
    // but every run is 3 long.
    let text = Kineto::trace(&STEADY, |b, _| mlp_step(b, 14, 250, &CHAIN[..3], 3, false));
    expect_none(&text, "fusion-candidates");
}

#[test]
fn elementwise_ops_the_host_runs_one_after_another_are_a_chain_though_the_gpu_waits() {
    // The chains of the positive case with the kernels 11 µs apart on the GPU: the host runs the
    // ops one after the other, so the wait is their dispatch, which one fused kernel does not
    // pay. Each run spans 65 + 4 × 11 = 109 µs, less the longest 18 µs: 91 µs, 0.91 ms per step
    // = 9.1%: medium, claimed before launch-bound.
    let text = Kineto::trace(&STEADY, |b, _| mlp_step(b, 10, 300, &CHAIN, 11, false));
    expect(&text, "fusion-candidates", 0.91, Severity::Medium);
}

#[test]
fn elementwise_kernels_with_other_host_work_between_are_no_chain() {
    // The same ops, but the host spends 60 µs elsewhere (more than 50 µs between the ops)
    // before each: the GPU's wait is that work, not the ops' dispatch, and fusing keeps it.
    let text = Kineto::trace(&STEADY, |b, _| {
        for _ in 0..10 {
            b.ops(&["aten::linear", "aten::addmm"], |b| b.kernel(GEMM, 3, 300));
            for (j, &dur) in CHAIN.iter().enumerate() {
                b.pause(60);
                let (op, kernel) = ELEMENTWISE[j];
                b.op_kernel(op, kernel, 11, dur);
            }
        }
    });
    expect_none(&text, "fusion-candidates");
}

#[test]
fn chains_of_compiler_generated_kernels_are_no_candidates() {
    // The chains of the positive case run as Triton kernels: torch.compile made them, and what
    // it left apart it does not join.
    let text = Kineto::trace(&STEADY, |b, _| {
        for _ in 0..10 {
            b.ops(&["aten::linear", "aten::addmm"], |b| b.kernel(GEMM, 3, 300));
            for (j, &dur) in CHAIN.iter().enumerate() {
                let name = format!("triton_poi_fused_add_mul_{j}");
                b.gpu_work("cuLaunchKernel", "kernel", &name, 3, dur, "");
            }
        }
    });
    expect_none(&text, "fusion-candidates");
}

// ---------------------------------------------------------------------------------------------
// compile-graph-breaks

/// A compiled model's step: each region a `CompiledFunction` launching Triton kernels (through
/// the driver) and a GEMM; between regions, the eager code that broke the graph.
fn compiled_step(b: &mut Kineto, regions: &[&str]) {
    for (n, region) in regions.iter().enumerate() {
        if n > 0 {
            b.op_kernel("aten::add", ADD, 2, 20);
        }
        b.annotation(region, |b| {
            b.ops(&["CompiledFunction"], |b| {
                b.gpu_work(
                    "cuLaunchKernel",
                    "kernel",
                    "triton_poi_fused_add_gelu_0",
                    2,
                    40,
                    "",
                );
                b.ops(&["aten::mm"], |b| b.kernel(GEMM, 2, 400));
                let norm = "triton_per_fused_native_layer_norm_1";
                b.gpu_work("cuLaunchKernel", "kernel", norm, 2, 60, "");
            });
        });
    }
}

#[test]
fn graph_breaks_split_each_step_into_compiled_regions() {
    // Two regions per step (frames 0 and 1): no time estimate, so a note.
    let text = Kineto::trace(&STEADY, |b, _| {
        compiled_step(
            b,
            &["Torch-Compiled Region: 0/0", "Torch-Compiled Region: 1/0"],
        )
    });
    let n = expect_note(detected(&text), "compile-graph-breaks");
    assert!(
        n.text.contains(": 2 compiled regions per step;"),
        "{}",
        n.text
    );
    assert!(!n.text.contains("recompiled"), "{}", n.text);
}

#[test]
fn a_recompiled_region() {
    // One region per step, but from step 3 on frame 0 runs its second compilation ("0/1").
    let text = Kineto::trace(&STEADY, |b, k| {
        let id = if k < 2 { "0/0" } else { "0/1" };
        compiled_step(b, &[&format!("Torch-Compiled Region: {id}")])
    });
    let n = expect_note(detected(&text), "compile-graph-breaks");
    assert!(
        n.text
            .contains(": 1 compiled regions per step; recompiled: Torch-Compiled Region: 0/1;"),
        "{}",
        n.text
    );
}

#[test]
fn one_compiled_region_per_step_is_fine() {
    let text = Kineto::trace(&STEADY, |b, _| {
        compiled_step(b, &["Torch-Compiled Region: 0/0"])
    });
    expect_no_note(&detected(&text), "compile-graph-breaks");
}

#[test]
fn backward_kernels_still_running_are_not_optimizer_kernels() {
    // GPU-bound step: the CPU enters SGD.step (foreach=False, 8 parameters: 8 aten::add_
    // kernels) at 7 000 µs while the GPU still runs the backward's last 50 reduce kernels
    // (queued long before; the stream ends the backward at 8 134 µs). The optimizer launches
    // 8 kernels, under 50: nothing to flag.
    let text = Kineto::trace(&STEADY, |b, _| {
        b.annotation("Optimizer.zero_grad#SGD.zero_grad", |_| {});
        b.annotation("nn.Module: MLP_0", |b| {
            for _ in 0..4 {
                b.ops(&["aten::linear", "aten::addmm"], |b| b.kernel(GEMM, 2, 200));
            }
        });
        b.thread(AUTOGRAD);
        for _ in 0..14 {
            let mm = [
                "autograd::engine::evaluate_function: AddmmBackward0",
                "AddmmBackward0",
                "aten::mm",
            ];
            b.ops(&mm, |b| {
                b.kernel(GEMM, 2, 220);
                b.kernel(GEMM, 2, 220);
            });
        }
        for _ in 0..50 {
            let sum = [
                "autograd::engine::evaluate_function: NativeLayerNormBackward0",
                "aten::sum",
            ];
            b.ops(&sum, |b| b.kernel("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)", 2, 20));
        }
        b.thread(MAIN);
        b.at(7_000);
        b.annotation("Optimizer.step#SGD.step", |b| {
            for _ in 0..PARAMS {
                b.op_kernel("aten::add_", ADD, 2, 5);
                b.pause(10);
            }
        });
    });
    expect_none(&text, "optimizer-not-fused");
}

// ---------------------------------------------------------------------------------------------
// Causes before symptoms, DataLoader waits in any pipeline, CPU-only traces, every era

/// `zero_grad` writing zeros slowly (3 µs fills launched 31 µs apart), then 300 short GEMMs
/// launched 18 µs apart (launch-bound; element-wise kernels would be fusion candidates), then a
/// foreach `SGD.step` (training, not flagged).
fn zero_grad_then_short_kernels(b: &mut Kineto) {
    b.annotation("Optimizer.zero_grad#SGD.zero_grad", |b| {
        for _ in 0..PARAMS {
            b.ops(&["aten::zero_", "aten::fill_"], |b| b.kernel(FILL, 2, 3));
            b.pause(20);
        }
    });
    b.annotation("nn.Module: MLP_0", |b| {
        for _ in 0..300 {
            b.op_kernel("aten::mm", GEMM, 2, 5);
            b.pause(10);
        }
    });
    b.annotation("Optimizer.step#SGD.step", |b| {
        b.ops(&["aten::_foreach_add_"], |b| b.kernel(MULTI_TENSOR, 2, 30))
    });
}

#[test]
fn a_cause_claims_its_time_before_the_symptom_and_the_symptom_names_it() {
    let text = Kineto::trace(&STEADY, |b, _| zero_grad_then_short_kernels(b));
    // zero_grad's range spans 1…251 µs of the step (8 × (11 µs of op chain + 20 µs of Python),
    // 1 µs to open and to close): its 8 fills of 3 µs and the GPU idle around them, all of the
    // range: 0.25 ms = 2.5%, low. Claimed after launch-bound (as before), only the fills were
    // left to it: 24 µs, under 0.5% of the step: no finding.
    expect(&text, "zero-grad-memset", 0.25, Severity::Low);
    // Inside the range the GPU idles 1…9 µs before its first work (host-only), and between and
    // after the fills mid-step: 250 - 24 - 8 = 218 µs that launch-bound would have taken.
    let found = findings(&text);
    let launch = found
        .iter()
        .find(|f| f.id == "launch-bound-small-kernels")
        .expect("launch-bound-small-kernels");
    assert!(
        launch.summary.ends_with(
            "; zero-grad-memset already explains 0.22 ms per step of this time, not counted here"
        ),
        "{}",
        launch.summary
    );
    let cause = launch.evidence.last().expect("evidence");
    assert_eq!(
        cause.what,
        "causes found first: zero-grad-memset already explains 0.22 ms per step of this time"
    );
    assert!(detected(&text).max_step_claimed_pct <= 100.0);
}

#[test]
fn symptoms_claim_after_every_cause() {
    let symptoms = [
        "host-only-time",
        "launch-bound-small-kernels",
        "gpu-low-utilization",
    ];
    let first_symptom = DETECTORS
        .iter()
        .position(|d| d.symptom())
        .expect("a symptom");
    let ids: Vec<&str> = DETECTORS.iter().map(|d| d.id()).collect();
    assert_eq!(&ids[first_symptom..], symptoms, "{ids:?}");
    assert!(DETECTORS[first_symptom..].iter().all(|d| d.symptom()));
}

/// Batch inference: the host sits in the DataLoader for `load` µs (Python), then the forward
/// pass runs 4 GEMMs of 200 µs. No backward, no optimizer.
fn inference_with_loading(b: &mut Kineto, load: i64) {
    b.annotation(
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
        |b| b.pause(load),
    );
    b.annotation("nn.Module: ResNet_0", |b| {
        for _ in 0..4 {
            b.ops(&["aten::linear", "aten::addmm"], |b| b.kernel(GEMM, 2, 200));
        }
    });
}

#[test]
fn dataloader_waits_in_batch_inference() {
    // The DataLoader range spans 1…2 003 µs of the step (1 µs to open, 2 000 of loading, 1 to
    // close); the GPU, done with the previous batch, idles all of it: 2.002 ms = 20.02%: high.
    // Before, the detector ran on training traces only.
    let text = Kineto::trace(&STEADY, |b, _| inference_with_loading(b, 2_000));
    let f = expect(&text, "dataloader-bottleneck", 2.002, Severity::High);
    assert!(
        f.summary.starts_with("the GPU is idle 2.00 ms per step"),
        "{}",
        f.summary
    );
}

#[test]
fn a_short_dataloader_wait_in_inference_is_fine() {
    // Workers have the batch ready: 30 µs in __next__, 0.3% of the step.
    let text = Kineto::trace(&STEADY, |b, _| inference_with_loading(b, 30));
    expect_none(&text, "dataloader-bottleneck");
}

/// A CPU-only training step: the DataLoader in the main process (1 500 µs), the forward pass
/// (4 × 500 µs of addmm), `zero_grad` writing zeros (8 × aten::zero_ → aten::fill_, 10 µs
/// each inside), and a single-tensor Adam (7 ops × 8 parameters of 3 µs, 2 µs apart). No
/// kernel, no runtime call.
fn cpu_training_step(b: &mut Kineto) {
    b.annotation(
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
        |b| b.pause(1_500),
    );
    b.annotation("nn.Module: MLP_0", |b| {
        for _ in 0..4 {
            b.ops(&["aten::linear", "aten::addmm"], |b| b.pause(500));
        }
    });
    b.annotation("Optimizer.zero_grad#Adam.zero_grad", |b| {
        for _ in 0..PARAMS {
            b.ops(&["aten::zero_", "aten::fill_"], |b| b.pause(10));
        }
    });
    b.annotation("Optimizer.step#Adam.step", |b| {
        for _ in 0..PARAMS {
            for op in [
                "aten::lerp_",
                "aten::mul_",
                "aten::addcmul_",
                "aten::sqrt",
                "aten::div",
                "aten::add_",
                "aten::addcdiv_",
            ] {
                b.ops(&[op], |b| b.pause(3));
                b.pause(2);
            }
        }
    });
}

#[test]
fn cpu_only_traces_get_host_time_findings() {
    let text = Kineto::trace(&STEADY, |b, _| cpu_training_step(b));
    // DataLoader: its range spans 1…1 503 µs, host time in it 1.502 ms = 15.02%: medium.
    let data = expect(&text, "dataloader-bottleneck", 1.502, Severity::Medium);
    assert_eq!(
        data.gate.gate.quantity,
        "host time inside DataLoader __next__ ranges, % of the step (CPU-only trace)"
    );
    // Adam.step: 56 outermost ops (≥ 50); its range is 1 + 56 × (5 + 1 + 2) + 1 = 450 µs of host
    // time, half of which a fused optimizer saves: 0.225 ms = 2.25%: low.
    let adam = expect(&text, "optimizer-not-fused", 0.225, Severity::Low);
    assert_eq!(count(&adam), Some(56));
    // zero_grad: 8 aten::zero_ of 15 µs (1 to open, the fill_ of 12, 1 after, 1 to close):
    // 120 µs = 0.12 ms = 1.2%: low; 8 per step in 4 steps.
    let zero = expect(&text, "zero-grad-memset", 0.12, Severity::Low);
    assert_eq!(count(&zero), Some(32));
    let ingested = ingest_bytes(text.as_bytes(), IngestOptions::default()).unwrap();
    let a = Analysis::new(&ingested.trace);
    assert!(a.cpu_only);
    let report = Report::new(&a, &detect::run(&a));
    assert!(report.trace.cpu_only);
    assert!(report
        .to_markdown("cpu.json")
        .contains("CPU-only trace (no GPU activity recorded: findings are host time)"));
}

#[test]
fn a_gpu_trace_is_not_cpu_only() {
    let text = training(Adam::Fused, false);
    let ingested = ingest_bytes(text.as_bytes(), IngestOptions::default()).unwrap();
    let a = Analysis::new(&ingested.trace);
    assert!(!a.cpu_only);
    assert!(!Report::new(&a, &detect::run(&a)).trace.cpu_only);
}

#[test]
fn a_cpu_only_step_with_set_to_none_and_workers_is_fine() {
    // No zero_ (set_to_none), 20 µs in __next__ (workers), foreach Adam: nothing to say.
    let text = Kineto::trace(&STEADY, |b, _| {
        b.annotation(
            "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
            |b| b.pause(20),
        );
        b.annotation("nn.Module: MLP_0", |b| {
            b.ops(&["aten::addmm"], |b| b.pause(4_000))
        });
        b.annotation("Optimizer.zero_grad#Adam.zero_grad", |_| {});
        b.annotation("Optimizer.step#Adam.step", |b| {
            b.ops(&["aten::_foreach_add_"], |b| b.pause(100))
        });
    });
    assert_eq!(findings(&text), Vec::new());
}

/// `text` as PyTorch 1.8–1.10 wrote it: capitalised categories, ranges as `Operator`.
fn old_era(text: &str) -> String {
    [
        ("cpu_op", "Operator"),
        ("user_annotation", "Operator"),
        ("cuda_runtime", "Runtime"),
        ("kernel", "Kernel"),
        ("gpu_memcpy", "Memcpy"),
    ]
    .iter()
    .fold(text.to_string(), |t, (new, old)| {
        t.replace(&format!(r#""cat": "{new}""#), &format!(r#""cat": "{old}""#))
    })
}

#[test]
fn pytorch_1_8_names_give_the_same_findings() {
    let old = old_era(&training(Adam::SingleTensor, true));
    assert!(old.contains(r#""cat": "Operator", "name": "Optimizer.step#Adam.step""#));
    expect(&old, "optimizer-not-fused", 0.87, Severity::Medium);
    expect(&old, "zero-grad-memset", 0.214, Severity::Low);
    let loading = old_era(&Kineto::trace(&STEADY, |b, _| {
        inference_with_loading(b, 2_000)
    }));
    expect(&loading, "dataloader-bottleneck", 2.002, Severity::High);
}

#[test]
fn apex_and_torchrec_fused_optimizers_are_fused() {
    // `Optimizer.step#FusedAdam.step` runs its own ops, none named _fused_: the name says it.
    // Real ones (HTA's TorchRec ranks) run one `state["step"] += 1` per parameter, on 0-dim
    // tensors, around kernels launched without an ATen op.
    let text = Kineto::trace(&STEADY, |b, _| {
        b.annotation("Optimizer.step#FusedAdam.step", |b| {
            for _ in 0..60 {
                let step_counter = r#""Input Dims": [[], [], []]"#;
                b.range(("cpu_op", step_counter), "aten::add_", |b| b.pause(3));
            }
        });
    });
    expect_none(&text, "optimizer-not-fused");
}

#[test]
fn a_pageable_copy_is_charged_the_gpu_idle_while_it_blocks_the_host() {
    // A 100 µs GEMM (launched at 2 µs, run 7…107 µs), then .cpu() of its result: a 2 MB
    // device-to-pageable copy whose cudaMemcpyAsync blocks the host 11…411 µs (the copy runs
    // 109…159 µs, then the host stages the data), then a 100 µs kernel launched at 417 µs.
    let text = Kineto::trace(&STEADY, |b, _| {
        b.op_kernel("aten::addmm", GEMM, 2, 100);
        b.ops(&["aten::to", "aten::copy_"], |b| {
            b.correlation += 1;
            let (corr, cpu, tid) = (b.correlation, b.cpu, b.tid);
            let link = format!(r#""correlation": {corr}"#);
            b.event(
                "cuda_runtime",
                "cudaMemcpyAsync",
                (PID, tid),
                (cpu, 400),
                &link,
            );
            let start = b.gpu + 2;
            let args = format!(r#"{link}, "device": 0, "stream": {STREAM}, "bytes": 2000000"#);
            let name = "Memcpy DtoH (Device -> Pageable)";
            b.event("gpu_memcpy", name, (0, STREAM), (start, 50), &args);
            b.gpu = start + 50;
            b.cpu = cpu + 401;
        });
        b.op_kernel("aten::relu", GEMM, 2, 100);
    });
    // The call blocks like a sync (`.cpu()`), so host-device-sync, a cause claimed first, takes
    // the idle it starves the GPU of, during the call and in the 1 ms after it: 159…419 µs (the
    // next kernel runs 419…519 µs) and 519…1411 µs, 1.152 ms. Pageable copies keep half the
    // copy, 25 µs, and the idle inside the call before work already queued, 107…109 µs: 0.027
    // ms. Before `.cpu()` was read as a sync, all 254 µs of idle in the call were theirs.
    let found = detected(&text).findings;
    let sync = found.iter().find(|f| f.id == "host-device-sync");
    assert!(
        sync.is_some_and(|f| (f.impact.ms_per_step - 1.152).abs() < 1e-3),
        "{:?}",
        found
            .iter()
            .map(|f| (f.id, f.impact.ms_per_step))
            .collect::<Vec<_>>()
    );
    expect(&text, "pageable-memcpy", 0.027, Severity::Low);
}

#[test]
fn gpu_work_recorded_with_cpu_activity_only_is_not_cpu_only() {
    // No kernel, no runtime call: but cuDNN ran the convolution, or the memory records are of
    // device memory (`Device Type` 1). The host's figures would be read as a CPU run's.
    let cpu_step = |b: &mut Kineto, op: &str, device_type: i64| {
        b.annotation("nn.Module: Net_0", |b| b.ops(&[op], |b| b.pause(100)));
        let (ts, tid) = (b.cpu, b.tid);
        b.events.push(format!(
            r#"{{"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": {PID}, "tid": {tid}, "ts": {ts}, "args": {{"Device Type": {device_type}, "Device Id": 0, "Addr": 1, "Bytes": 512, "Total Allocated": 512, "Total Reserved": 2048}}}}"#
        ));
    };
    let cpu_only = |op: &str, device_type: i64| {
        let text = Kineto::trace(&STEADY, |b, _| cpu_step(b, op, device_type));
        let ingested = ingest_bytes(text.as_bytes(), IngestOptions::default()).unwrap();
        Analysis::new(&ingested.trace).cpu_only
    };
    assert!(cpu_only("aten::mkldnn_convolution", 0));
    assert!(!cpu_only("aten::cudnn_convolution", 0));
    assert!(!cpu_only("aten::mkldnn_convolution", 1));
}

#[test]
fn a_single_tensor_optimizer_behind_a_busy_gpu_is_charged_its_launch_gaps() {
    // A 3 000 µs GEMM (7…3 007 µs), then Adam.step one tensor at a time: the host launches its
    // 56 kernels while the GEMM runs, so the GPU never idles inside the range; they run after it,
    // 5 µs each, 2 µs apart (3 009…3 399 µs).
    let text = Kineto::trace(&STEADY, |b, _| {
        b.op_kernel("aten::addmm", GEMM, 2, 3_000);
        b.annotation("Optimizer.step#Adam.step", |b| {
            for _ in 0..PARAMS {
                for op in ["aten::lerp_", "aten::mul_", "aten::addcmul_", "aten::sqrt"] {
                    b.op_kernel(op, MUL, 2, 5);
                    b.op_kernel(op, MUL, 2, 5);
                }
            }
        });
    });
    // 8 × 4 × 2 = 64 kernels (≥ 50). The 63 gaps of 2 µs between them, 126 µs, and half their
    // 320 µs, 160 µs: 0.286 ms = 2.86%, low. Before, only the idle inside the host's range: 0.
    let f = expect(&text, "optimizer-not-fused", 0.286, Severity::Low);
    assert_eq!(count(&f), Some(64));
}
