//! Statistics that say whether a trace looks like a real one: kernel-duration quantiles, kernels
//! and CPU ops per step, launch gaps and launch delays, GPU busy share, and the share of kernel
//! time by kernel class; and which of the shared real traces the generator's traces compare with
//! (`REAL_TRACES`). `ttap-dev realism` compares them on these statistics.
//!
//! Reads only the model.

use torchtraceap::internals::features::quantile;
use torchtraceap::internals::metrics::union_ns;
use torchtraceap::model::{kernels, EventKind, Trace, NONE};

/// A kind of workload the generator writes and the real traces show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    CnnTraining,
    VisionInference,
}

impl Workload {
    pub const ALL: [Workload; 2] = [Workload::CnnTraining, Workload::VisionInference];

    pub fn label(self) -> &'static str {
        match self {
            Workload::CnnTraining => "CNN training",
            Workload::VisionInference => "vision inference",
        }
    }
}

/// A real trace to compare the generator with: its path under the shared traces
/// (`../shared/traces`), GPU, workload, kind.
pub struct RealTrace {
    pub path: &'static str,
    pub gpu: &'static str,
    pub workload: &'static str,
    pub kind: Workload,
}

/// The real traces with GPU work of a kind the generator writes, as the shared traces'
/// `CATALOG.md` describes them. CPU-only profiles, LLM serving, micro-benchmarks, recommender
/// models and the one transformer training trace (a tiny text model of 16 kernels a step, no
/// match for ViT-B/16 or Swin-T) are left out.
pub const REAL_TRACES: [RealTrace; 8] = [
    RealTrace {
        path: "haraldger__High-Performance-Deep-Learning/resnet50_trace.json",
        gpu: "T4",
        workload: "ResNet-50 training step",
        kind: Workload::CnnTraining,
    },
    RealTrace {
        path: "haraldger__High-Performance-Deep-Learning/resnet50_bottleneck_trace.json",
        gpu: "T4",
        workload: "ResNet-50 training step (bottleneck experiment)",
        kind: Workload::CnnTraining,
    },
    RealTrace {
        path: "haraldger__High-Performance-Deep-Learning/vgg16_trace.json",
        gpu: "T4",
        workload: "VGG-16 training step",
        kind: Workload::CnnTraining,
    },
    RealTrace {
        path: "facebookresearch__HolisticTraceAnalysis/tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
        gpu: "V100",
        workload: "ResNet-50 DDP training, 5 steps",
        kind: Workload::CnnTraining,
    },
    RealTrace {
        path: "AMD-AGI__TraceLens/tests__traces__mi300__resnet_act_checkpoint.json.gz",
        gpu: "MI300X",
        workload: "ResNet DDP training, activation checkpointing, 6 steps",
        kind: Workload::CnnTraining,
    },
    RealTrace {
        path: "AMD-AGI__TraceLens/tests__traces__mi300__ddp_resnet18_no_pool__train_resnet18.json.gz",
        gpu: "MI300X",
        workload: "ResNet-18 DDP training, caching allocator off",
        kind: Workload::CnnTraining,
    },
    RealTrace {
        path: "AMD-AGI__TraceLens/tests__traces__mi300__Falconsai_nsfw_image_detection__1016002.json.gz",
        gpu: "MI300X",
        workload: "ViT-base inference, 2 steps",
        kind: Workload::VisionInference,
    },
    RealTrace {
        path: "AMD-AGI__TraceLens/tests__traces__mi300__facebook_timesformer-base-finetuned-k400__1016002.json.gz",
        gpu: "MI300X",
        workload: "TimeSformer (video ViT) inference",
        kind: Workload::VisionInference,
    },
];

/// What a kernel does, as far as its name tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelClass {
    /// Convolutions (fprop, dgrad, wgrad; tensor-core or SIMT).
    Conv,
    /// Matrix multiplications (cuBLAS, cutlass, rocBLAS/hipBLASLt `Cijk_`).
    Gemm,
    /// Fused attention and softmax.
    Attention,
    /// Batch, layer and group norms.
    Norm,
    /// Element-wise and small reduction kernels.
    Elementwise,
    /// NCHW↔NHWC conversions.
    Layout,
    /// NCCL/RCCL collectives.
    Collective,
    Other,
}

impl KernelClass {
    pub const ALL: [KernelClass; 8] = [
        KernelClass::Conv,
        KernelClass::Gemm,
        KernelClass::Attention,
        KernelClass::Norm,
        KernelClass::Elementwise,
        KernelClass::Layout,
        KernelClass::Collective,
        KernelClass::Other,
    ];

    pub fn label(self) -> &'static str {
        match self {
            KernelClass::Conv => "conv",
            KernelClass::Gemm => "gemm",
            KernelClass::Attention => "attention",
            KernelClass::Norm => "norm",
            KernelClass::Elementwise => "elementwise",
            KernelClass::Layout => "layout",
            KernelClass::Collective => "collective",
            KernelClass::Other => "other",
        }
    }

    /// The class of a kernel from its name; collectives are known from their kind.
    pub fn of(name: &str, collective: bool) -> KernelClass {
        let lower = name.to_ascii_lowercase();
        if collective {
            KernelClass::Collective
        } else if kernels::is_layout(&lower) {
            KernelClass::Layout
        } else if kernels::is_attention(&lower) {
            KernelClass::Attention
        } else if ["norm", "bn_fw", "bn_bw"].iter().any(|m| lower.contains(m)) {
            KernelClass::Norm
        } else if kernels::is_convolution(&lower) || lower.contains("cudnn") {
            // cuDNN's other kernels are its convolutions (`volta_fp16_s884cudnn_…`).
            KernelClass::Conv
        } else if ["gemm", "gemv", "cijk_", "cutlass", "matmul"]
            .iter()
            .any(|m| lower.contains(m))
        {
            KernelClass::Gemm
        } else if kernels::is_elementwise(name) || lower.contains("elementwise") {
            KernelClass::Elementwise
        } else {
            KernelClass::Other
        }
    }
}

/// The 10th, 50th, 90th and 99th percentiles of a sample, in µs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Quantiles {
    pub p10: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
}

impl Quantiles {
    /// Nearest-rank percentiles of nanosecond values; `None` for an empty sample.
    pub fn of_ns(mut ns: Vec<i64>) -> Option<Quantiles> {
        if ns.is_empty() {
            return None;
        }
        ns.sort_unstable();
        let us = |q| quantile(&ns, q) as f64 / 1e3;
        Some(Quantiles {
            p10: us(0.1),
            p50: us(0.5),
            p90: us(0.9),
            p99: us(0.99),
        })
    }
}

/// The statistics of one trace, over its steps (`Trace::steps`: the `ProfilerStep#N` ranges, or
/// the GPU's active span when none was recorded).
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    pub steps: usize,
    /// Compute and collective kernels launched in a step (by the launch call's start, or by
    /// their own start when no launch is linked).
    pub kernels: usize,
    pub kernel_us: Option<Quantiles>,
    pub kernels_per_step: f64,
    /// `cpu_op` events (ATen operators and the like) that start in a step, per step.
    pub cpu_ops_per_step: f64,
    /// Start-to-start time between consecutive kernel launch calls on one thread, in a step.
    pub launch_gap_us: Option<Quantiles>,
    /// From a launch call's start to its kernel's start.
    pub launch_delay_us: Option<Quantiles>,
    /// Union of GPU work (kernels, collectives, copies, memsets) over the steps' time.
    pub gpu_busy: f64,
    /// Share of kernel time per class, in the order of `KernelClass::ALL`.
    pub kernel_time_share: [f64; KernelClass::ALL.len()],
}

impl Stats {
    pub fn of(t: &Trace) -> Stats {
        let e = &t.events;
        let in_step = |ts: i64| t.steps.iter().any(|s| ts >= s.start && ts < s.end);
        let step_ns: i64 = t.steps.iter().map(|s| s.end - s.start).sum();
        let (mut durs, mut delays, mut busy) = (Vec::new(), Vec::new(), Vec::new());
        let mut class_ns = [0i64; KernelClass::ALL.len()];
        let mut cpu_ops = 0usize;
        let mut launch_starts: Vec<(u32, i64)> = Vec::new();
        for i in t.recorded() {
            let kind = e.kind[i];
            if kind.is_gpu_work() {
                for s in &t.steps {
                    let (a, b) = (e.start[i].max(s.start), e.end(i).min(s.end));
                    if b > a {
                        busy.push((a, b));
                    }
                }
            }
            match kind {
                EventKind::GpuKernel | EventKind::Collective => {
                    let launch = t.launch_of(i as u32);
                    let at = launch.map_or(e.start[i], |l| e.start[l as usize]);
                    if !in_step(at) {
                        continue;
                    }
                    durs.push(e.dur[i]);
                    if let Some(l) = launch {
                        delays.push(e.start[i] - e.start[l as usize]);
                    }
                    let class = KernelClass::of(t.name_of(i), kind == EventKind::Collective);
                    class_ns[class as usize] += e.dur[i];
                }
                EventKind::CpuOp if in_step(e.start[i]) => cpu_ops += 1,
                EventKind::RuntimeCall
                    if e.detail[i] != NONE
                        && t.runtime_class(i).launches()
                        && in_step(e.start[i]) =>
                {
                    launch_starts.push((e.track[i], e.start[i]));
                }
                _ => {}
            }
        }
        // Events are sorted by track, then start: consecutive launches of one thread are
        // neighbours.
        let gaps: Vec<i64> = launch_starts
            .windows(2)
            .filter(|p| p[0].0 == p[1].0)
            .map(|p| p[1].1 - p[0].1)
            .collect();
        let steps = t.steps.len();
        let per_step = |n: usize| n as f64 / steps.max(1) as f64;
        let kernel_ns: i64 = class_ns.iter().sum();
        Stats {
            steps,
            kernels: durs.len(),
            kernels_per_step: per_step(durs.len()),
            kernel_us: Quantiles::of_ns(durs),
            cpu_ops_per_step: per_step(cpu_ops),
            launch_gap_us: Quantiles::of_ns(gaps),
            launch_delay_us: Quantiles::of_ns(delays),
            gpu_busy: union_ns(busy) as f64 / step_ns.max(1) as f64,
            kernel_time_share: class_ns.map(|ns| ns as f64 / kernel_ns.max(1) as f64),
        }
    }

    /// The share of kernel time of one class.
    pub fn share(&self, class: KernelClass) -> f64 {
        self.kernel_time_share[class as usize]
    }
}
