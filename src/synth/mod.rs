//! A labelled trace generator: Kineto traces of vision-model steps, with anti-patterns injected
//! at chosen steps, and the labels saying where.
//!
//! The traces follow what the shared real traces show: `ProfilerStep#N` ranges, a DataLoader
//! range, the input's host-to-device copy, `## forward ##` with the ATen op nesting of each
//! layer (and autocast's weight cast before each layer with weights, with its backward),
//! backward on autograd's own thread, a fused optimizer; every kernel launched by a
//! runtime call that shares its correlation id (and an `ac2g` flow); kernel names of the GPU's
//! generation; a slower first step (autotuning, first allocations) that analyses treat as
//! warm-up; jitter on every duration. The output is deterministic for a given seed.
//!
//! Writes only JSON text; reads nothing but its configuration.

pub mod gpu;

use serde_json::{json, Value};

pub use gpu::Gpu;

/// The vision models the generator can imitate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    ResNet50,
    VitB16,
    /// Swin-T: shifted-window attention in four stages (2, 2, 6, 2 blocks).
    SwinT,
    /// A DETR-style detector: a ResNet-50 backbone, then a transformer encoder and decoder.
    Detr,
    /// An R(2+1)D-18-style video classifier: (2+1)D convolutions over 16-frame clips.
    Video3d,
    /// MobileNetV2: inverted residual blocks of a pointwise, a depthwise 3×3 and a pointwise
    /// convolution (the depthwise ones run PyTorch's own kernels, not cuDNN's).
    MobileNetV2,
    /// A YOLOv5-style one-stage detector: convolution, batch norm and SiLU in CSP blocks, with
    /// nearest upsampling and concatenation in the neck.
    Yolo,
}

impl Model {
    pub const ALL: [Model; 7] = [
        Model::ResNet50,
        Model::VitB16,
        Model::SwinT,
        Model::Detr,
        Model::Video3d,
        Model::MobileNetV2,
        Model::Yolo,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Model::ResNet50 => "resnet50",
            Model::VitB16 => "vit_b16",
            Model::SwinT => "swin_t",
            Model::Detr => "detr",
            Model::Video3d => "video3d",
            Model::MobileNetV2 => "mobilenet_v2",
            Model::Yolo => "yolo",
        }
    }

    pub fn parse(id: &str) -> Option<Model> {
        Model::ALL.into_iter().find(|m| m.id() == id)
    }

    /// Parameters, in millions: the gradients a data-parallel step all-reduces.
    fn params_m(self) -> f64 {
        match self {
            Model::ResNet50 => 25.6,
            Model::VitB16 => 86.6,
            Model::SwinT => 28.3,
            Model::Detr => 41.3,
            Model::Video3d => 33.3,
            Model::MobileNetV2 => 3.5,
            Model::Yolo => 21.2,
        }
    }

    /// Forward GPU time of a batch of 64 on an A100 in mixed precision, in µs.
    fn forward_us(self) -> f64 {
        match self {
            Model::ResNet50 => 22_000.0,
            Model::VitB16 => 45_000.0,
            Model::SwinT => 26_000.0,
            Model::Detr => 60_000.0,
            Model::Video3d => 80_000.0,
            Model::MobileNetV2 => 14_000.0,
            Model::Yolo => 34_000.0,
        }
    }
}

/// An anti-pattern the generator can inject; its id is the detector's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AntiPattern {
    DataLoader,
    HostSync,
    PageableCopy,
    Fp32Simt,
    AllocatorChurn,
    LaunchBound,
}

impl AntiPattern {
    pub const ALL: [AntiPattern; 6] = [
        AntiPattern::DataLoader,
        AntiPattern::HostSync,
        AntiPattern::PageableCopy,
        AntiPattern::Fp32Simt,
        AntiPattern::AllocatorChurn,
        AntiPattern::LaunchBound,
    ];

    /// The id of the detector that finds it.
    pub fn id(self) -> &'static str {
        match self {
            AntiPattern::DataLoader => "dataloader-bottleneck",
            AntiPattern::HostSync => "host-device-sync",
            AntiPattern::PageableCopy => "pageable-memcpy",
            AntiPattern::Fp32Simt => "fp32-without-tensor-cores",
            AntiPattern::AllocatorChurn => "allocator-churn",
            AntiPattern::LaunchBound => "launch-bound-small-kernels",
        }
    }

    pub fn parse(id: &str) -> Option<AntiPattern> {
        AntiPattern::ALL.into_iter().find(|p| p.id() == id)
    }

    /// The phases of the step whose windows it affects (as `window::Phase::label`).
    pub fn phases(self) -> &'static [&'static str] {
        match self {
            AntiPattern::DataLoader | AntiPattern::PageableCopy => &["data loading"],
            AntiPattern::HostSync | AntiPattern::AllocatorChurn => &["forward"],
            AntiPattern::Fp32Simt | AntiPattern::LaunchBound => &["forward", "backward"],
        }
    }
}

/// One anti-pattern at one step (0-based), with a severity in (0, 1].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Injection {
    pub pattern: AntiPattern,
    pub step: u32,
    pub severity: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub model: Model,
    pub gpu: Gpu,
    pub training: bool,
    pub steps: u32,
    pub batch: u32,
    pub seed: u64,
    pub injections: Vec<Injection>,
    /// Realistic noise that is not labelled: host overhead over the whole trace (CPU ops and
    /// launches 1× to 8× slower: profiler overhead, a slow host), 0.1–0.5 µs between queued
    /// kernels, a host that runs up to 50 ms
    /// ahead of the GPU between steps, no phase ranges in half the healthy inference traces
    /// (their windows are slices), per-step GPU clock drift (±10%) and, each in about one step
    /// in four, a slow batch from the DataLoader (up to 4× its usual
    /// time), one `.item()` in the forward pass (a logged loss), one to three device mallocs, and
    /// the targets copied from pageable memory.
    pub noise: bool,
}

/// Where an anti-pattern was injected: a step and a phase of it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Label {
    /// `N` of `ProfilerStep#N`.
    pub step: i64,
    /// The window phase (as `window::Phase::label`).
    pub phase: &'static str,
    /// The detector id of the anti-pattern.
    pub pattern: &'static str,
}

/// A data-parallel run (`generate_ranks`): its size, and the injections that only one rank gets
/// (rank, injection), such as a straggler's DataLoader stall.
#[derive(Clone, Debug, PartialEq)]
pub struct DataParallel {
    pub world_size: u32,
    pub rank_injections: Vec<(u32, Injection)>,
}

/// A generated trace and its labels.
pub struct Generated {
    pub trace: String,
    pub labels: Vec<Label>,
}

/// The generator's version: raised whenever the same configuration and seed would give another
/// trace, so that a model trained on generated traces says which generator made them
/// (`ml::Provenance`), and a stale one is noticed.
pub const GENERATOR_VERSION: u32 = 2;

/// The first step's number.
pub const FIRST_STEP: i64 = 10;

/// SplitMix64: a small, well-known generator, so that the same seed gives the same trace on
/// every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A factor in `[1 - spread, 1 + spread]`.
    fn jitter(&mut self, spread: f64) -> f64 {
        1.0 + spread * (2.0 * self.unit() - 1.0)
    }

    /// One of `items`.
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize]
    }
}

/// A random scenario, for training and evaluating the window detector: one of `models` on one of
/// `gpus`, training (three times in four) or inference, a batch of 16 to 128, 6 to 8 steps, and
/// up to three anti-patterns, each at its own steady-state step, with severities in [0.1, 1].
/// The same seed gives the same scenario.
pub fn scenario(models: &[Model], gpus: &[Gpu], seed: u64) -> Config {
    let mut rng = Rng(seed ^ 0x5CE4_A210_5EED_0001);
    let model = rng.pick(models);
    let gpu = rng.pick(gpus);
    let training = rng.unit() < 0.75;
    let batch = rng.pick(&[16, 32, 64, 128]);
    let steps = rng.pick(&[6, 7, 8]);
    let count = rng.pick(&[0, 1, 1, 2, 2, 3]);
    let mut free: Vec<u32> = (1..steps).collect();
    let injections = (0..count)
        .map(|_| {
            let step = free.remove((rng.next() % free.len() as u64) as usize);
            Injection {
                pattern: rng.pick(&AntiPattern::ALL),
                step,
                severity: 0.1 + 0.9 * rng.unit(),
            }
        })
        .collect();
    Config {
        model,
        gpu,
        training,
        steps,
        batch,
        seed,
        injections,
        noise: true,
    }
}

const MAIN: i64 = 1001;
const AUTOGRAD: i64 = 1002;
const STREAM: i64 = 7;
/// The stream NCCL runs the gradient all-reduce on.
const COMM_STREAM: i64 = 13;
const PID: i64 = 1000;
/// DDP's default gradient bucket (`bucket_cap_mb=25`).
const BUCKET_BYTES: f64 = 25.0 * 1024.0 * 1024.0;

/// One rank of a data-parallel run, as `generate_ranks` plans it.
struct Rank {
    rank: u32,
    world_size: u32,
    /// The injections of this rank only.
    injections: Vec<Injection>,
    /// Per step: extra DataLoader time of this rank (host skew), µs.
    skew: Vec<f64>,
    /// Per step: how far the slowest rank is behind this one, µs (`Comm::wait`).
    waits: Vec<f64>,
}

/// The all-reduce state of a data-parallel rank's writer.
struct Comm {
    rank: u32,
    world_size: u32,
    /// When the communication stream is free again.
    free: f64,
    /// How far this step's slowest rank is behind this one, µs.
    wait: f64,
}

/// Builds the event list while keeping the CPU threads' and the GPU stream's clocks (µs).
struct Writer {
    events: Vec<Value>,
    rng: Rng,
    gpu: Gpu,
    /// Host time per thread.
    cpu: [f64; 2],
    /// When the stream is free again.
    stream_free: f64,
    correlation: u64,
    /// Kernel-time multiplier of the step being written (injections, warm-up).
    slow: f64,
    /// Host-time multiplier of CPU ops and launches (profiler overhead, a slow host).
    host: f64,
    simt: bool,
    tiny_kernels: bool,
    /// Whether the code marks its phases with `record_function` ranges (`## forward ##`).
    annotate: bool,
    /// Whether queued kernels start a little after the one before them ends (noise).
    kernel_gaps: bool,
    comm: Option<Comm>,
}

fn thread_index(tid: i64) -> usize {
    usize::from(tid == AUTOGRAD)
}

impl Writer {
    fn x(&mut self, cat: &str, name: &str, tid: i64, ts: f64, dur: f64, args: Value) {
        let pid = if tid == STREAM || tid == COMM_STREAM {
            0
        } else {
            PID
        };
        // Round start and end (not the duration) to the nanosecond, so that ranges that touch
        // in the generator touch in the trace.
        let start = (ts * 1000.0).round() / 1000.0;
        let end = ((ts + dur) * 1000.0).round() / 1000.0;
        let dur = ((end - start) * 1000.0).round() / 1000.0;
        let mut e = json!({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": start, "dur": dur});
        if !args.is_null() {
            e["args"] = args;
        }
        self.events.push(e);
    }

    fn now(&self, tid: i64) -> f64 {
        self.cpu[thread_index(tid)]
    }

    fn advance(&mut self, tid: i64, us: f64) {
        self.cpu[thread_index(tid)] += us;
    }

    /// Nested CPU ops around `body` (outermost first); each range ends after its children.
    fn ops(&mut self, tid: i64, names: &[&str], body: impl FnOnce(&mut Writer)) {
        let start = self.now(tid);
        let d = 3.0 * self.host * self.rng.jitter(0.3);
        self.advance(tid, d);
        match names.split_first() {
            Some((_, rest)) if !rest.is_empty() => self.ops(tid, rest, body),
            _ => body(self),
        }
        let d = 2.0 * self.host * self.rng.jitter(0.3);
        self.advance(tid, d);
        let end = self.now(tid);
        self.x(
            "cpu_op",
            names[0],
            tid,
            start,
            end - start,
            json!({"External id": self.correlation}),
        );
    }

    /// A user annotation around `body`.
    fn annotation(&mut self, tid: i64, name: &str, body: impl FnOnce(&mut Writer)) {
        let start = self.now(tid);
        body(self);
        let end = self.now(tid);
        self.x(
            "user_annotation",
            name,
            tid,
            start,
            end - start,
            Value::Null,
        );
    }

    /// A phase of the step (`## forward ##`) around `body`, where the code marks its phases.
    fn phase(&mut self, tid: i64, name: &str, body: impl FnOnce(&mut Writer)) {
        if self.annotate {
            self.annotation(tid, name, body);
        } else {
            body(self);
        }
    }

    /// A runtime call on `tid` launching GPU work of `us` on the stream.
    fn launch(&mut self, tid: i64, kernel: &str, us: f64) {
        // A launch-bound step (a tiny batch, or a tiny model) runs kernels of a few µs.
        let us = if self.tiny_kernels {
            (us / 200.0).clamp(1.5, 8.0)
        } else {
            us * self.slow
        };
        let (end, call) = self.enqueue(tid, STREAM, kernel, self.stream_free, us, f64::MIN);
        self.stream_free = end;
        let d = call + 15.0 * self.host * self.rng.jitter(0.4);
        self.advance(tid, d);
    }

    /// A launch call on `tid` queueing `kernel` on `stream`, to start after `ready`, for `us`
    /// (jittered), and not to end before `until` (a collective waiting for the slowest rank).
    /// Returns the kernel's end and the call's duration (which the caller spends on `tid`).
    fn enqueue(
        &mut self,
        tid: i64,
        stream: i64,
        kernel: &str,
        ready: f64,
        us: f64,
        until: f64,
    ) -> (f64, f64) {
        let call_start = self.now(tid);
        let call = 5.0 * self.rng.jitter(0.4);
        self.correlation += 1;
        let corr = self.correlation;
        let launch = self.gpu.launch();
        self.x(
            "cuda_runtime",
            launch,
            tid,
            call_start,
            call,
            json!({"correlation": corr, "cbid": 211}),
        );
        // In a noisy trace a queued kernel starts 0.1 to 0.5 µs after the one before it ends, as
        // on real GPUs (the overhead between consecutive kernels that real traces show as kernel
        // wait); a noise-free one queues them back to back.
        let gap = if self.kernel_gaps {
            0.1 + 0.4 * self.rng.unit()
        } else {
            0.0
        };
        let start = (ready + gap).max(call_start + call + 3.0 * self.rng.jitter(0.5));
        let dur = (us * self.rng.jitter(0.08)).max(until - start);
        self.x(
            "kernel",
            kernel,
            stream,
            start,
            dur,
            json!({"correlation": corr, "device": 0, "stream": stream, "grid": [128, 1, 1], "block": [256, 1, 1],
                   "registers per thread": 64, "shared memory": 16384, "est. achieved occupancy %": 50}),
        );
        self.events.push(json!({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": PID, "tid": tid, "ts": call_start}));
        self.events.push(json!({"ph": "f", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": 0, "tid": stream, "ts": start, "bp": "e"}));
        (start + dur, call)
    }

    /// DDP's all-reduce of one gradient bucket of `bytes`, from autograd's thread, on the
    /// communication stream once the bucket's gradients are computed: `c10d::allreduce_`,
    /// `record_param_comms` with the collective's arguments, `nccl:all_reduce`, the kernel. A
    /// rank ahead of the slowest one by `Comm::wait` finishes each all-reduce no earlier than
    /// that much after its own gradients were ready: when the slowest rank's were.
    fn all_reduce(&mut self, bytes: f64) {
        let Some(comm) = self.comm.as_mut() else {
            return;
        };
        let (rank, world, free, wait) = (comm.rank, comm.world_size, comm.free, comm.wait);
        let n = f64::from(world);
        // A ring all-reduce moves 2(n-1)/n of the bucket through each GPU's links, after about
        // 10 µs of latency.
        let us = 10.0 + bytes * 2.0 * (n - 1.0) / n / (self.gpu.bus_gbps() * 1e3);
        let elements = (bytes / 4.0) as u64;
        self.ops(AUTOGRAD, &["c10d::allreduce_"], |w| {
            let args = json!({"External id": w.correlation, "Collective name": "allreduce", "In msg nelems": elements,
                              "Out msg nelems": elements, "Group size": world, "dtype": "Float", "Rank": rank,
                              "Process Group Name": "0", "Process Group Description": "default_pg"});
            let inner = w.now(AUTOGRAD);
            w.annotation(AUTOGRAD, "nccl:all_reduce", |w| {
                let kernel = w.gpu.all_reduce_kernel();
                let ready = w.stream_free;
                let until = ready + wait + us;
                let (end, call) = w.enqueue(AUTOGRAD, COMM_STREAM, kernel, free.max(ready), us, until);
                w.advance(AUTOGRAD, call);
                if let Some(c) = w.comm.as_mut() {
                    c.free = end;
                }
            });
            let end = w.now(AUTOGRAD);
            w.x("cpu_op", "record_param_comms", AUTOGRAD, inner, end - inner, args);
        });
        let d = 10.0 * self.host * self.rng.jitter(0.3);
        self.advance(AUTOGRAD, d);
    }

    /// A runtime call that does no GPU work (malloc, free, synchronize).
    fn call(&mut self, tid: i64, api: &str, us: f64) {
        let name = format!("{}{api}", self.gpu.runtime_prefix());
        let start = self.now(tid);
        self.correlation += 1;
        self.x(
            "cuda_runtime",
            &name,
            tid,
            start,
            us,
            json!({"correlation": self.correlation}),
        );
        self.advance(tid, us);
    }

    /// The input batch's copy to the device.
    fn copy_input(&mut self, bytes: u64, pageable: bool) {
        self.ops(MAIN, &["aten::to", "aten::_to_copy", "aten::copy_"], |w| {
            let (name, gbps) = if pageable {
                ("Memcpy HtoD (Pageable -> Device)", 6.0)
            } else {
                ("Memcpy HtoD (Pinned -> Device)", 22.0)
            };
            let us = bytes as f64 / (gbps * 1e3);
            let call_start = w.now(MAIN);
            w.correlation += 1;
            let corr = w.correlation;
            let api = format!("{}MemcpyAsync", w.gpu.runtime_prefix());
            let start = w.stream_free.max(call_start + 4.0);
            w.x("gpu_memcpy", name, STREAM, start, us, json!({"correlation": corr, "device": 0, "stream": STREAM, "bytes": bytes, "memory bandwidth (GB/s)": gbps}));
            w.stream_free = start + us;
            // A pageable copy returns only when it is done.
            let call = if pageable { start + us - call_start } else { 6.0 };
            w.x("cuda_runtime", &api, MAIN, call_start, call, json!({"correlation": corr}));
            w.advance(MAIN, call);
        });
    }

    /// The host waits for the stream (`.item()` on a loss or a metric), then works on the value
    /// in Python for `host_us` while the drained GPU has nothing queued.
    fn item(&mut self, host_us: f64) {
        self.ops(MAIN, &["aten::item", "aten::_local_scalar_dense"], |w| {
            let wait = (w.stream_free - w.now(MAIN)).max(0.0) + 8.0;
            w.call(MAIN, "StreamSynchronize", wait);
        });
        let d = host_us * self.rng.jitter(0.2);
        self.advance(MAIN, d);
    }
}

const CONV: &[&str] = &[
    "aten::conv2d",
    "aten::convolution",
    "aten::_convolution",
    "aten::cudnn_convolution",
];
const BATCH_NORM: &[&str] = &[
    "aten::batch_norm",
    "aten::_batch_norm_impl_index",
    "aten::cudnn_batch_norm",
];
const RELU: &[&str] = &["aten::relu_", "aten::clamp_min_"];
const LAYER_NORM: &[&str] = &["aten::layer_norm", "aten::native_layer_norm"];
const LINEAR: &[&str] = &["aten::linear", "aten::addmm"];
const SDPA: &[&str] = &[
    "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_flash_attention_forward",
];
const ADD_OP: &[&str] = &["aten::add"];
const ROLL_OP: &[&str] = &["aten::roll"];
const CONV3D: &[&str] = &[
    "aten::conv3d",
    "aten::convolution",
    "aten::_convolution",
    "aten::cudnn_convolution",
];
const GELU_OP: &[&str] = &["aten::gelu"];
const DEPTHWISE_CONV: &[&str] = &[
    "aten::conv2d",
    "aten::convolution",
    "aten::_convolution",
    "aten::_conv_depthwise2d",
];
const RELU6: &[&str] = &["aten::hardtanh_"];
const SILU_OP: &[&str] = &["aten::silu_"];
const UPSAMPLE_OP: &[&str] = &["aten::upsample_nearest2d"];
const CAT_OP: &[&str] = &["aten::cat"];
/// Autocast's cast of a layer's fp32 weights to half precision, and its backward.
const CAST: &[&str] = &["aten::to", "aten::_to_copy", "aten::copy_"];
const CAST_BACKWARD: &[&str] = &[
    "autograd::engine::evaluate_function: ToCopyBackward0",
    "aten::to",
    "aten::_to_copy",
    "aten::copy_",
];

/// A layer: its op chain, its kernel, and its share of the forward GPU time.
type Layer = (&'static [&'static str], Kernel, f64);

/// One ResNet-50 convolution unit (53 of them).
const RESNET_UNIT: [Layer; 3] = [
    (CONV, Kernel::Conv, 0.70),
    (BATCH_NORM, Kernel::BatchNorm, 0.18),
    (RELU, Kernel::Elementwise, 0.12),
];

/// One ViT-B/16 encoder block (12 of them).
const VIT_BLOCK: [Layer; 10] = [
    (LAYER_NORM, Kernel::LayerNorm, 0.02),
    (LINEAR, Kernel::Gemm, 0.22),
    (SDPA, Kernel::Attention, 0.20),
    (LINEAR, Kernel::Gemm, 0.08),
    (ADD_OP, Kernel::Add, 0.02),
    (LAYER_NORM, Kernel::LayerNorm, 0.02),
    (LINEAR, Kernel::Gemm, 0.17),
    (GELU_OP, Kernel::Gelu, 0.04),
    (LINEAR, Kernel::Gemm, 0.17),
    (ADD_OP, Kernel::Add, 0.02),
];

/// One Swin-T block: attention within shifted windows (12 of them).
const SWIN_BLOCK: [Layer; 11] = [
    (LAYER_NORM, Kernel::LayerNorm, 0.02),
    (ROLL_OP, Kernel::Elementwise, 0.03),
    (LINEAR, Kernel::Gemm, 0.15),
    (SDPA, Kernel::Attention, 0.20),
    (LINEAR, Kernel::Gemm, 0.07),
    (ADD_OP, Kernel::Add, 0.02),
    (LAYER_NORM, Kernel::LayerNorm, 0.02),
    (LINEAR, Kernel::Gemm, 0.20),
    (GELU_OP, Kernel::Gelu, 0.05),
    (LINEAR, Kernel::Gemm, 0.20),
    (ADD_OP, Kernel::Add, 0.02),
];

/// One (2+1)D convolution of the video model: a spatial (1×3×3) and a temporal (3×1×1) 3D
/// convolution, each with batch norm and ReLU (16 of them).
const VIDEO_UNIT: [Layer; 6] = [
    (CONV3D, Kernel::Conv, 0.46),
    (BATCH_NORM, Kernel::BatchNorm, 0.08),
    (RELU, Kernel::Elementwise, 0.06),
    (CONV3D, Kernel::Conv, 0.26),
    (BATCH_NORM, Kernel::BatchNorm, 0.08),
    (RELU, Kernel::Elementwise, 0.06),
];

/// One MobileNetV2 inverted residual block (17 of them): the depthwise convolution, memory
/// bound, takes the largest share.
const MOBILENET_BLOCK: [Layer; 9] = [
    (CONV, Kernel::Conv, 0.20),
    (BATCH_NORM, Kernel::BatchNorm, 0.08),
    (RELU6, Kernel::Elementwise, 0.06),
    (DEPTHWISE_CONV, Kernel::DepthwiseConv, 0.32),
    (BATCH_NORM, Kernel::BatchNorm, 0.08),
    (RELU6, Kernel::Elementwise, 0.06),
    (CONV, Kernel::Conv, 0.14),
    (BATCH_NORM, Kernel::BatchNorm, 0.04),
    (ADD_OP, Kernel::Add, 0.02),
];

/// One YOLOv5-style CSP unit of the backbone (24 of them)…
const YOLO_UNIT: [Layer; 7] = [
    (CONV, Kernel::Conv, 0.44),
    (BATCH_NORM, Kernel::BatchNorm, 0.12),
    (SILU_OP, Kernel::Silu, 0.13),
    (CONV, Kernel::Conv, 0.18),
    (BATCH_NORM, Kernel::BatchNorm, 0.05),
    (SILU_OP, Kernel::Silu, 0.05),
    (CAT_OP, Kernel::Concat, 0.03),
];

/// …and of its neck (4 of them), which upsamples and concatenates feature maps.
const YOLO_NECK: [Layer; 5] = [
    (UPSAMPLE_OP, Kernel::Upsample, 0.15),
    (CAT_OP, Kernel::Concat, 0.10),
    (CONV, Kernel::Conv, 0.50),
    (BATCH_NORM, Kernel::BatchNorm, 0.12),
    (SILU_OP, Kernel::Silu, 0.13),
];

/// `unit` repeated `n` times, sharing `share` of the forward time among the repeats.
fn repeat(unit: &[Layer], n: usize, share: f64) -> Vec<Layer> {
    (0..n)
        .flat_map(|_| {
            unit.iter()
                .map(move |&(ops, k, s)| (ops, k, s * share / n as f64))
        })
        .collect()
}

/// The model's forward layers, each with its share of the forward GPU time.
fn forward_layers(model: Model) -> Vec<Layer> {
    let mut layers = match model {
        Model::ResNet50 => return repeat(&RESNET_UNIT, 53, 1.0),
        Model::VitB16 => repeat(&VIT_BLOCK, 12, 1.0),
        Model::SwinT => repeat(&SWIN_BLOCK, 12, 0.96),
        Model::Detr => {
            let mut l = repeat(&RESNET_UNIT, 53, 0.55);
            l.extend(repeat(&VIT_BLOCK, 6, 0.2));
            l.extend(repeat(&VIT_BLOCK, 6, 0.21));
            l
        }
        Model::Video3d => repeat(&VIDEO_UNIT, 16, 0.96),
        Model::MobileNetV2 => repeat(&MOBILENET_BLOCK, 17, 0.96),
        Model::Yolo => {
            let mut l = repeat(&YOLO_UNIT, 24, 0.76);
            l.extend(repeat(&YOLO_NECK, 4, 0.2));
            l
        }
    };
    let stem = if model == Model::Video3d {
        CONV3D
    } else {
        CONV
    };
    layers.insert(0, (stem, Kernel::Conv, 0.02));
    layers.push((LINEAR, Kernel::Gemm, 0.02));
    layers
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kernel {
    Conv,
    BatchNorm,
    LayerNorm,
    Gemm,
    Attention,
    Elementwise,
    Add,
    Gelu,
    DepthwiseConv,
    Silu,
    Upsample,
    Concat,
}

impl Kernel {
    /// Whether the layer has weights that autocast casts to half precision each step.
    fn has_weights(self) -> bool {
        matches!(self, Kernel::Conv | Kernel::Gemm | Kernel::DepthwiseConv)
    }
}

impl Writer {
    /// Autocast's weight cast (or its backward, `ops`): a short copy kernel before each layer
    /// with weights, as mixed-precision traces show. fp32 (SIMT) steps have none.
    fn cast(&mut self, tid: i64, ops: &[&str], us: f64) {
        if !self.simt {
            self.ops(tid, ops, |w| w.launch(tid, gpu::CAST, us));
        }
    }

    fn kernel_name(&self, k: Kernel, backward: bool) -> &'static str {
        let names = self.gpu.kernels();
        match k {
            Kernel::Conv if self.simt => self.gpu.simt().0,
            Kernel::Gemm if self.simt => self.gpu.simt().1,
            Kernel::Conv if backward => names.conv_dgrad,
            Kernel::Conv => names.conv,
            Kernel::Gemm => names.gemm,
            Kernel::Attention => names.attention,
            Kernel::BatchNorm => names.batch_norm,
            Kernel::LayerNorm => names.layer_norm,
            Kernel::Elementwise => gpu::ELEMENTWISE,
            Kernel::Add => gpu::ADD,
            Kernel::Gelu => gpu::GELU,
            Kernel::DepthwiseConv if backward => gpu::DEPTHWISE_DGRAD,
            Kernel::DepthwiseConv => gpu::DEPTHWISE,
            Kernel::Silu => gpu::SILU,
            Kernel::Upsample => gpu::UPSAMPLE,
            Kernel::Concat => gpu::CONCAT,
        }
    }
}

/// The host-time multipliers a noisy trace draws from: half run at the usual speed, the others
/// with the profiler's overhead (`record_shapes`, `with_stack`) or a slow host, up to host-bound
/// steps whose GPU waits between kernels.
const HOST_OVERHEAD: [f64; 6] = [1.0, 1.0, 1.0, 2.0, 4.0, 8.0];

/// How far a noisy trace's host may run ahead of the GPU between steps, µs…
const RUN_AHEAD_US: [f64; 4] = [SYNCED_AHEAD_US, 5_000.0, 20_000.0, 50_000.0];
/// …and a noise-free one's: it starts each step as the GPU finishes the last.
const SYNCED_AHEAD_US: f64 = 200.0;

/// The unlabelled noise of one step (`Config::noise`).
struct StepNoise {
    /// GPU clock drift: a factor on kernel times.
    drift: f64,
    /// A factor on the DataLoader's time.
    loader_hiccup: f64,
    /// The forward layer after which a loss is logged with `.item()`.
    logged_at: Option<usize>,
    /// Device mallocs (each with its free) in the forward pass.
    mallocs: usize,
    /// The targets (8 bytes a sample) copied from pageable memory.
    pageable_targets: bool,
}

impl StepNoise {
    const QUIET: StepNoise = StepNoise {
        drift: 1.0,
        loader_hiccup: 1.0,
        logged_at: None,
        mallocs: 0,
        pageable_targets: false,
    };

    /// Each kind of noise in about one step in four (the drift in every step).
    fn draw(rng: &mut Rng, layers: usize) -> StepNoise {
        let sometimes = |rng: &mut Rng| rng.unit() < 0.25;
        StepNoise {
            drift: rng.jitter(0.1),
            loader_hiccup: if sometimes(rng) {
                1.0 + 3.0 * rng.unit()
            } else {
                1.0
            },
            logged_at: sometimes(rng).then(|| rng.next() as usize % layers),
            mallocs: if sometimes(rng) {
                1 + rng.next() as usize % 3
            } else {
                0
            },
            pageable_targets: sometimes(rng),
        }
    }
}

/// Generates the trace and its labels.
pub fn generate(c: &Config) -> Generated {
    generate_rank(c, None)
}

/// Generates the traces of every rank of a data-parallel run, rank 0 first: each rank runs `c`
/// (its own seed, so its own jitter and noise) plus its own `rank_injections`, all-reduces its
/// gradients in DDP buckets on a communication stream while backward runs, and starts each step
/// a little later or earlier than the others (up to 0.3 ms of DataLoader skew). A rank ahead of
/// the slowest one waits for it in its all-reduces (NCCL kernels that last until the slowest
/// rank joins): a DataLoader stall injected on one rank (a straggler) makes every other rank
/// wait in NCCL for as long, unlabelled (the label is the straggler's). Other rank-only
/// injections slow their own rank only. Inference runs have no all-reduce.
pub fn generate_ranks(c: &Config, dp: &DataParallel) -> Vec<Generated> {
    let world = dp.world_size.max(1);
    let forward = forward_us(c);
    let mut rng = Rng(c.seed ^ 0xDA7A_9A2A_11E1_0001);
    // Per step and rank: the DataLoader skew, and how late the rank reaches its first
    // all-reduce (the skew and any injected stall), µs.
    let skew: Vec<Vec<f64>> = (0..c.steps)
        .map(|_| (0..world).map(|_| 300.0 * rng.unit()).collect())
        .collect();
    let lateness: Vec<Vec<f64>> = (0..c.steps)
        .map(|k| {
            (0..world)
                .map(|r| {
                    let stall: f64 = dp
                        .rank_injections
                        .iter()
                        .filter(|(at, i)| {
                            *at == r && i.step == k && i.pattern == AntiPattern::DataLoader
                        })
                        .map(|(_, i)| loader_stall_us(forward, i.severity) - LOADER_US)
                        .sum();
                    skew[k as usize][r as usize] + stall.max(0.0)
                })
                .collect()
        })
        .collect();
    (0..world)
        .map(|r| {
            let plan = Rank {
                rank: r,
                world_size: world,
                injections: dp
                    .rank_injections
                    .iter()
                    .filter(|(at, _)| *at == r)
                    .map(|(_, i)| *i)
                    .collect(),
                skew: skew.iter().map(|s| s[r as usize]).collect(),
                waits: lateness
                    .iter()
                    .map(|l| l.iter().copied().fold(0.0, f64::max) - l[r as usize])
                    .collect(),
            };
            generate_rank(
                &Config {
                    seed: c
                        .seed
                        .wrapping_add(u64::from(r).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                    ..c.clone()
                },
                Some(&plan),
            )
        })
        .collect()
}

/// The DataLoader's usual time in a step, µs.
const LOADER_US: f64 = 150.0;

/// The DataLoader's time in a step with an injected stall of `severity`, µs.
fn loader_stall_us(forward_us: f64, severity: f64) -> f64 {
    forward_us * 3.0 * severity.clamp(0.01, 1.0)
}

/// One weight cast's GPU time, µs: a few µs of launch latency, and the layer's share of the
/// weights read in fp32 and written in half precision (6 bytes a parameter) at about 1.5 TB/s on
/// an A100.
fn cast_us(c: &Config, layers: &[Layer]) -> f64 {
    let with_weights = layers.iter().filter(|l| l.1.has_weights()).count().max(1);
    let params = c.model.params_m() * 1e6 / with_weights as f64;
    2.0 + 6.0 * params / 1.5e6 * c.gpu.slowdown()
}

/// Forward GPU time of the configured batch on the configured GPU, µs.
fn forward_us(c: &Config) -> f64 {
    c.model.forward_us() * c.gpu.slowdown() * f64::from(c.batch) / 64.0
}

fn generate_rank(c: &Config, rank: Option<&Rank>) -> Generated {
    let mut w = Writer {
        events: Vec::new(),
        rng: Rng(c.seed),
        gpu: c.gpu,
        cpu: [1_000_000.0, 1_000_000.0],
        stream_free: 0.0,
        correlation: 0,
        slow: 1.0,
        host: 1.0,
        simt: false,
        tiny_kernels: false,
        annotate: true,
        kernel_gaps: c.noise,
        comm: rank.map(|r| Comm {
            rank: r.rank,
            world_size: r.world_size,
            free: 0.0,
            wait: 0.0,
        }),
    };
    // How far the host may run ahead of the GPU between steps: a loop that syncs every step
    // starts the next one when the GPU has caught up; one that does not queues up to a step of
    // work (real GPU-bound traces show kernels starting tens of ms after their launch).
    let mut ahead_us = SYNCED_AHEAD_US;
    if c.noise {
        w.host = w.rng.pick(&HOST_OVERHEAD);
        if rank.is_none() {
            ahead_us = w.rng.pick(&RUN_AHEAD_US);
        }
        // Many inference scripts mark no phases: their windows are slices.
        w.annotate = c.training || !c.injections.is_empty() || w.rng.unit() < 0.5;
    }
    let layers = forward_layers(c.model);
    // Forward GPU time of the batch on this GPU, spread over the layers by their shares.
    let forward_us = forward_us(c);
    let injections: Vec<Injection> = c
        .injections
        .iter()
        .chain(rank.map_or(&[][..], |r| &r.injections))
        .copied()
        .collect();
    let grad_bytes = c.model.params_m() * 1e6 * 4.0;
    let cast_us = cast_us(c, &layers);
    let input_bytes = u64::from(c.batch) * 3 * 224 * 224 * 2;
    let mut labels = Vec::new();
    for k in 0..c.steps {
        let number = FIRST_STEP + i64::from(k);
        let injected = |p: AntiPattern| {
            injections
                .iter()
                .find(|i| i.pattern == p && i.step == k)
                .map(|i| i.severity.clamp(0.01, 1.0))
        };
        for i in injections.iter().filter(|i| i.step == k) {
            labels.extend(i.pattern.phases().iter().map(|&phase| Label {
                step: number,
                phase,
                pattern: i.pattern.id(),
            }));
        }
        let warmup = k == 0;
        // The first step autotunes (slower kernels) and fills the caching allocator.
        // Unlabelled noise: clock drift, a slow batch, a logged loss (`Config::noise`).
        let noise = if c.noise {
            StepNoise::draw(&mut w.rng, layers.len())
        } else {
            StepNoise::QUIET
        };
        w.slow = noise.drift * if warmup { 1.6 } else { 1.0 };
        w.simt = injected(AntiPattern::Fp32Simt).is_some();
        if w.simt {
            w.slow *= 3.0;
        }
        w.tiny_kernels = injected(AntiPattern::LaunchBound).is_some();
        let skew = rank.map_or(0.0, |r| r.skew[k as usize]);
        if let (Some(comm), Some(r)) = (w.comm.as_mut(), rank) {
            comm.wait = r.waits[k as usize];
        }
        // Both threads start the step together, after the GPU caught up with the last one.
        let start = w.cpu[0].max(w.cpu[1]).max(w.stream_free - ahead_us);
        w.cpu = [start, start];
        w.annotation(MAIN, &format!("ProfilerStep#{number}"), |w| {
            let loader_us = skew
                + match injected(AntiPattern::DataLoader) {
                    // Past the work queued ahead, so that the GPU idles for the stall.
                    Some(s) => loader_stall_us(forward_us, s) + ahead_us - SYNCED_AHEAD_US,
                    None => LOADER_US * noise.loader_hiccup,
                };
            w.ops(MAIN, &["enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"], |w| {
                let d = loader_us * w.rng.jitter(0.05);
                w.advance(MAIN, d);
            });
            w.copy_input(input_bytes, injected(AntiPattern::PageableCopy).is_some());
            if noise.pageable_targets {
                w.copy_input(u64::from(c.batch) * 8, true);
            }
            let syncs = injected(AntiPattern::HostSync).map_or(0, |s| (s * layers.len() as f64 / 6.0).ceil() as usize);
            let churn = injected(AntiPattern::AllocatorChurn).map_or(noise.mallocs, |s| (s * layers.len() as f64 / 2.0).ceil() as usize);
            w.phase(MAIN, "## forward ##", |w| {
                for (n, (ops, kernel, share)) in layers.iter().enumerate() {
                    if n < churn || (warmup && n % 3 == 0) {
                        let d = 60.0 * w.rng.jitter(0.3);
                        w.call(MAIN, "Malloc", d);
                    }
                    if kernel.has_weights() {
                        w.cast(MAIN, CAST, cast_us);
                    }
                    let name = w.kernel_name(*kernel, false);
                    w.ops(MAIN, ops, |w| w.launch(MAIN, name, forward_us * share));
                    if n < churn {
                        let d = 90.0 * w.rng.jitter(0.3);
                        w.call(MAIN, "Free", d);
                    }
                    if n > 0 && n % 6 == 0 && n / 6 <= syncs {
                        w.item(400.0);
                    }
                    if noise.logged_at == Some(n) {
                        w.item(100.0);
                    }
                }
            });
            if c.training {
                backward(w, &layers, forward_us, grad_bytes, cast_us);
                w.ops(MAIN, &["Optimizer.zero_grad#SGD.zero_grad"], |w| w.advance(MAIN, 40.0));
                w.ops(MAIN, &["Optimizer.step#SGD.step", "aten::_fused_sgd_"], |w| {
                    for _ in 0..3 {
                        w.launch(MAIN, gpu::OPTIMIZER, 120.0);
                    }
                });
            }
            // Memory the caching allocator reports once per step.
            let ts = w.now(MAIN);
            let allocated = (f64::from(c.batch) * 180e6 / 64.0) as i64;
            w.events.push(json!({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "s": "t", "pid": PID, "tid": MAIN, "ts": ts,
                                 "args": {"Bytes": 4_194_304, "Total Allocated": allocated, "Total Reserved": allocated * 5 / 4, "Device Type": 1, "Device Id": 0, "Addr": 140_000_000_000i64 + i64::from(k)}}));
        });
    }
    let (name, major, minor, mem_gib, sms) = c.gpu.properties();
    let doc = json!({
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": name, "totalGlobalMem": mem_gib << 30, "computeMajor": major, "computeMinor": minor,
                              "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
                              "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
                              "sharedMemPerMultiprocessor": 167936, "numSms": sms}],
        "distributedInfo": distributed_info(rank),
        "traceEvents": w.events,
        "traceName": match rank {
            None => format!("synth_{}_{}_seed{}.pt.trace.json", c.model.id(), c.gpu.id(), c.seed),
            Some(r) => format!("synth_{}_{}_seed{}_rank{}.pt.trace.json", c.model.id(), c.gpu.id(), c.seed, r.rank),
        },
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1_700_000_000_000_000_000u64,
    });
    Generated {
        trace: serde_json::to_string(&doc).expect("a JSON value serializes"),
        labels,
    }
}

/// `distributedInfo` as Kineto writes it: one process group of every rank.
fn distributed_info(rank: Option<&Rank>) -> Value {
    match rank {
        None => json!({"backend": "nccl", "rank": 0, "world_size": 1}),
        Some(r) => {
            json!({"backend": "nccl", "rank": r.rank, "world_size": r.world_size, "pg_count": 1,
                          "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                                         "pg_size": r.world_size, "ranks": (0..r.world_size).collect::<Vec<u32>>()}],
                          "nccl_version": "2.21.5"})
        }
    }
}

/// Backward on autograd's thread, layers in reverse, while the main thread waits in
/// `## backward ##`. A data-parallel rank all-reduces `grad_bytes` of gradients in DDP buckets
/// as they are computed, and the step's GPU work after backward waits for the last one.
fn backward(w: &mut Writer, layers: &[Layer], forward_us: f64, grad_bytes: f64, cast_us: f64) {
    let start = w.now(MAIN);
    w.cpu[1] = start + 20.0;
    let buckets = (grad_bytes / BUCKET_BYTES).ceil().max(1.0) as usize;
    let per_bucket = layers.len().div_ceil(buckets);
    let bucket_bytes = grad_bytes / layers.len().div_ceil(per_bucket) as f64;
    for (j, (ops, kernel, share)) in layers.iter().rev().enumerate() {
        let op = ops[0].trim_start_matches("aten::");
        let node = format!(
            "autograd::engine::evaluate_function: {}Backward0",
            capitalised(op)
        );
        let dgrad = w.kernel_name(*kernel, true);
        let wgrad = match kernel {
            Kernel::Conv if !w.simt => w.gpu.kernels().conv_wgrad,
            Kernel::DepthwiseConv => gpu::DEPTHWISE_WGRAD,
            _ => dgrad,
        };
        let inner = match kernel {
            Kernel::Conv => "aten::convolution_backward",
            Kernel::Gemm => "aten::mm",
            Kernel::BatchNorm => "aten::native_batch_norm_backward",
            Kernel::LayerNorm => "aten::native_layer_norm_backward",
            Kernel::Attention => "aten::_scaled_dot_product_flash_attention_backward",
            Kernel::Gelu => "aten::gelu_backward",
            Kernel::Elementwise | Kernel::Add => "aten::threshold_backward",
            Kernel::DepthwiseConv => "aten::_conv_depthwise2d_backward",
            Kernel::Silu => "aten::silu_backward",
            Kernel::Upsample => "aten::upsample_nearest2d_backward",
            Kernel::Concat => "aten::slice_backward",
        };
        if kernel.has_weights() {
            w.cast(AUTOGRAD, CAST_BACKWARD, cast_us);
        }
        w.ops(AUTOGRAD, &[node.as_str(), inner], |w| {
            w.launch(AUTOGRAD, dgrad, forward_us * share);
            if kernel.has_weights() {
                w.launch(AUTOGRAD, wgrad, forward_us * share);
            }
        });
        if (j + 1) % per_bucket == 0 || j + 1 == layers.len() {
            w.all_reduce(bucket_bytes);
        }
    }
    if let Some(comm) = &w.comm {
        w.stream_free = w.stream_free.max(comm.free);
    }
    let end = w.now(AUTOGRAD).max(w.stream_free);
    w.x(
        "user_annotation",
        "## backward ##",
        MAIN,
        start,
        end - start,
        Value::Null,
    );
    w.cpu[0] = end;
}

fn capitalised(op: &str) -> String {
    op.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next().map_or(String::new(), |f| {
                f.to_ascii_uppercase().to_string() + c.as_str()
            })
        })
        .collect()
}
