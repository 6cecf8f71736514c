//! The generation of a trace: step by step (the DataLoader, the input copy, forward, backward on
//! autograd's thread, the optimizer), with the injected anti-patterns and the unlabelled noise,
//! for one process or every rank of a data-parallel run.

use serde_json::{json, Value};

use super::config::{Config, DataParallel, Injection, Label, Rng, FIRST_STEP};
use super::gpu;
use super::writer::{Comm, Writer, AUTOGRAD, MAIN, PID};
use super::zoo::{forward_layers, Kernel, Layer, CAST, CAST_BACKWARD};
use torchtraceap::model::AntiPattern;

/// A generated trace and its labels.
pub struct Generated {
    pub trace: String,
    pub labels: Vec<Label>,
}

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
